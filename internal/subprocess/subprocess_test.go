package subprocess

import (
	"os/exec"
	"testing"
)

func TestKillEndsTheProcessAndReportsTheSignal(t *testing.T) {
	p, err := Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited is still open after Kill returned")
	}
	if p.Err() == nil {
		t.Error("Err after SIGKILL is nil, want the signal reported")
	}
	p.Kill() // killing an exited process does nothing, and does not block
}

func TestExitedClosesWhenTheProcessEndsByItself(t *testing.T) {
	p, err := Start(exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if p.Err() != nil {
		t.Errorf("Err of a process that exited 0: %v, want nil", p.Err())
	}
}

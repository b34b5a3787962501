package subprocess

import (
	"os"
	"os/exec"
	"strings"
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

func TestLogTailIsTheEndOfTheFile(t *testing.T) {
	path := t.TempDir() + "/log"
	if err := os.WriteFile(path, []byte("first line\nlast line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := LogTail(path, 10); got != "last line\n" {
		t.Errorf("LogTail(10) = %q, want the last 10 bytes", got)
	}
	if got := LogTail(path, 1<<10); got != "first line\nlast line\n" {
		t.Errorf("LogTail of more than the file = %q, want all of it", got)
	}
	if got := LogTail(path+".missing", 10); !strings.Contains(got, "no such file") {
		t.Errorf("LogTail of a missing file = %q, want the reason", got)
	}
}

// Package subprocess runs child processes that die with their parent: the
// S3 servers that tests start, and the sluice processes the chaos program
// kills and restarts. A test binary killed by go test's -timeout, or a chaos
// run stopped with ^C at the wrong moment, must not leave servers holding
// ports and disk behind.
package subprocess

import (
	"os"
	"os/exec"
)

// Process is a started child process, reaped in the background.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result; read only after exited is closed
}

// Start starts cmd, on Linux with a parent-death signal, and reaps it in
// the background.
func Start(cmd *exec.Cmd) (*Process, error) {
	if err := startDetachable(cmd); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited, for whatever reason.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is Wait's result (nil for exit status 0). Call it only after Exited
// is closed.
func (p *Process) Err() error { return p.err }

// Kill sends SIGKILL, as a crash would, and waits for the process to exit.
// Killing an exited process does nothing.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill() // fails only if it already exited
	<-p.exited
}

// LogTail returns the last n bytes of the log file at path, for an error
// about the process that wrote it, or the reason it cannot be read.
func LogTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(data[max(0, len(data)-n):])
}

package s3server

import "os/exec"

// process is a started server process.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result; read only after exited is closed
}

// startProcess starts cmd and reaps it in the background.
func startProcess(cmd *exec.Cmd) (*process, error) {
	if err := startDetachable(cmd); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// kill sends SIGKILL and waits for the process to exit.
func (p *process) kill() {
	_ = p.cmd.Process.Kill() // fails only if it already exited
	<-p.exited
}

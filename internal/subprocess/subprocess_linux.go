package subprocess

import (
	"os/exec"
	"runtime"
	"syscall"
)

// startDetachable starts cmd so that the kernel kills it when its parent
// dies without cleaning up (go test's -timeout, a crash, SIGKILL): no child
// outlives the program that started it.
//
// Pdeathsig fires when the thread that forked the child exits, not the
// process. The Go runtime only ends a thread when a goroutine exits while
// locked to it; locking here for the fork and unlocking afterwards, with the
// goroutine alive, leaves the thread in the pool for good.
func startDetachable(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Start()
}

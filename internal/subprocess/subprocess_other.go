//go:build !linux

package subprocess

import "os/exec"

// startDetachable starts cmd. Outside Linux there is no parent-death
// signal, so a parent killed before its cleanups leaves the child running.
func startDetachable(cmd *exec.Cmd) error {
	return cmd.Start()
}

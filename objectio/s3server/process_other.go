//go:build !linux

package s3server

import "os/exec"

// startDetachable starts cmd. Outside Linux there is no parent-death
// signal, so a test binary killed before its cleanups leaves the server
// running.
func startDetachable(cmd *exec.Cmd) error {
	return cmd.Start()
}

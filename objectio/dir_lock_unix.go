//go:build unix

package objectio

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock(2) on f without blocking. It reports
// false if another open file holds the lock, in this process or another:
// flock locks belong to the open file, so two Dir values in one process
// exclude each other just as two processes do.
func tryLock(f *os.File) (bool, error) {
	conn, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var lockErr error
	err = conn.Control(func(fd uintptr) {
		lockErr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	})
	if err != nil {
		return false, err
	}
	if errors.Is(lockErr, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return lockErr == nil, lockErr
}

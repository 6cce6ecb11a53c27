//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package redlocktest

import (
	"errors"
	"os"
	"syscall"
)

// errClaimed means another process holds a port's claim.
var errClaimed = errors.New("redlocktest: port claimed by another process")

// lockFile takes f's exclusive lock without waiting: errClaimed when
// another process holds it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errClaimed
	}
	return err
}

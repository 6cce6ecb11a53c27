//go:build unix && !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package redlocktest

import (
	"errors"
	"os"
)

// errClaimed means another process holds a port's claim.
var errClaimed = errors.New("redlocktest: port claimed by another process")

// lockFile cannot lock files here: claims hold within this process only.
func lockFile(*os.File) error { return errors.ErrUnsupported }

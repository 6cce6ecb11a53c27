//go:build !linux

package cli

import "syscall"

// dieWithRedlock does nothing where the kernel cannot signal a child when
// its parent dies: a command whose redlock was killed goes on without the
// lock's renewal.
func dieWithRedlock(*syscall.SysProcAttr) {}

//go:build !linux

package cli

import "syscall"

// dieWithRedlock does nothing where the kernel cannot signal a child when
// its parent dies: the watchdog of the command's process group kills it
// (see startWatchdog).
func dieWithRedlock(*syscall.SysProcAttr) {}

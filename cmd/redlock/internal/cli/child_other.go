//go:build !linux

package cli

import "syscall"

// dieWithRedlock does nothing where the kernel cannot signal a child when
// its parent dies: the watchdog of the command's process group kills it
// (see startWatchdog).
func dieWithRedlock(*syscall.SysProcAttr) {}

// stopSignal reports false where redlock does not look for the command's
// stops: Ctrl-Z at the terminal the command was given stops the command
// alone.
func (c *child) stopSignal() (syscall.Signal, bool) { return 0, false }

//go:build linux

package nodes

import "syscall"

var sigterm = syscall.SIGTERM

// sysProcAttr asks the kernel to kill the server when the benchmark dies, so
// that an interrupted run leaves no process behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

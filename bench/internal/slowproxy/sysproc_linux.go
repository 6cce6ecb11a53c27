//go:build linux

package slowproxy

import "syscall"

// sysProcAttr asks the kernel to kill the proxy when the benchmark dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

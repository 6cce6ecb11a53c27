//go:build linux

package delayproxy

import "syscall"

// sysProcAttr asks the kernel to kill the proxy when the benchmark dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

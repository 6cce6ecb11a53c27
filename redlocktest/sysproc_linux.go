//go:build linux

package redlocktest

import "syscall"

// sysProcAttr puts the child in its own process group and asks the kernel
// to SIGKILL it when the thread that started it dies (see the package doc).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

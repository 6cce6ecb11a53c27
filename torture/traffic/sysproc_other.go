//go:build !linux

package traffic

import "syscall"

// sysProcAttr puts a worker in its own process group, so that a Ctrl-C in
// the terminal reaches only the harness, which then stops its workers.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

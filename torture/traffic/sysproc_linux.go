//go:build linux

package traffic

import "syscall"

// sysProcAttr puts a worker in its own process group, so that a Ctrl-C in
// the terminal reaches only the harness, which then stops its workers, and
// asks the kernel to kill the worker if the harness dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

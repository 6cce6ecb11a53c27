//go:build unix && !linux

package redlocktest

import "syscall"

// sysProcAttr puts the child in its own process group. Only Linux can also
// tie the child's life to the parent's.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

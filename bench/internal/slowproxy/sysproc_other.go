//go:build !linux

package slowproxy

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

//go:build !linux

package delayproxy

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

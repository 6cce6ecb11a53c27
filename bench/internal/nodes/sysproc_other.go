//go:build !linux

package nodes

import (
	"os"
	"syscall"
)

var sigterm = os.Interrupt

func sysProcAttr() *syscall.SysProcAttr { return nil }

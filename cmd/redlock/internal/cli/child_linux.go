package cli

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dieWithRedlock makes the kernel kill the command when redlock itself
// dies without stopping it (SIGKILL, the OOM killer): nobody renews the
// lock then, and the command must not go on past its TTL unprotected.
// Only the command's own process gets the signal, not those it started
// (the watchdog of its process group kills those: see startWatchdog), and
// Linux drops it when the command execs a set-user-ID or set-group-ID
// program, or one with file capabilities (sudo, ping).
func dieWithRedlock(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// stopSignal returns the signal that stopped the command's own process,
// and false when it is not stopped, without collecting its exit status.
func (c *child) stopSignal() (syscall.Signal, bool) {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, c.cmd.Process.Pid, &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil || info.Signo != int32(syscall.SIGCHLD) {
		return 0, false
	}
	return syscall.Signal(childStatus(&info)), true
}

// childStatus returns the si_status of a SIGCHLD's siginfo, which x/sys
// does not name: the union that holds it follows si_signo, si_errno and
// si_code, aligned to a pointer; in it, si_pid and si_uid come first.
func childStatus(info *unix.Siginfo) int32 {
	union := (3*unsafe.Sizeof(int32(0)) + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), union+2*unsafe.Sizeof(int32(0))))
}

package cli

import (
	"syscall"

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

// stopped reports whether the command's own process is stopped (Ctrl-Z
// at the terminal it was given), without collecting its exit status.
func (c *child) stopped() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, c.cmd.Process.Pid, &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo == int32(syscall.SIGCHLD)
}

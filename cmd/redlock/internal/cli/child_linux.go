package cli

import "syscall"

// dieWithRedlock makes the kernel kill the command when redlock itself
// dies without stopping it (SIGKILL, the OOM killer): nobody renews the
// lock then, and the command must not go on past its TTL unprotected.
// Only the command's own process gets the signal, not those it started.
func dieWithRedlock(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

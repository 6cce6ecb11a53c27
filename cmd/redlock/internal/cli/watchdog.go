package cli

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// watchdogVerb is the hidden verb of the process that kills the command's
// process group when the redlock running it dies (see startWatchdog).
const watchdogVerb = "_watchdog"

// watchdogDone is what redlock writes to its watchdog once it is done
// with the command: the watchdog then exits and kills nothing.
const watchdogDone = "done\n"

// startWatchdog starts a process, in a process group of its own, that
// kills the command's process group pgid with SIGKILL when this redlock
// dies while the command runs (SIGKILL, the OOM killer): the kernel then
// closes this process's end of a pipe to it, and nobody renews the lock.
// The kernel itself kills only the command's own process (see
// dieWithRedlock), not what it started. It returns the function that ends
// the watch, which leaves the group alone.
func startWatchdog(pgid int) (end func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe() // close-on-exec: the command does not hold it open
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, watchdogVerb, strconv.Itoa(pgid))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	go cmd.Wait() // reaps it once the watch ends
	return func() {
		w.WriteString(watchdogDone)
		w.Close()
	}, nil
}

// watchdog runs the hidden verb: it reads stdin to its end, and kills the
// process group args[0] with SIGKILL unless redlock wrote watchdogDone
// first. It ignores the signals that end redlock, which redlock forwards
// to the command itself.
func watchdog(stdin io.Reader, args []string) int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM)
	if len(args) != 1 {
		return exitUsage
	}
	pgid, err := strconv.Atoi(args[0])
	if err != nil || pgid <= 1 {
		return exitUsage
	}
	said, _ := io.ReadAll(stdin)
	if string(said) != watchdogDone {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return exitOK
}

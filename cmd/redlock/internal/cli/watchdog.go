package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// watchdogVerb is the hidden verb of the process that kills the command's
// process group when the redlock running it dies (see startWatchdog).
const watchdogVerb = "_watchdog"

// watchdogDone is what redlock writes to its watchdog once it is done
// with the command: the watchdog then exits and kills nothing.
const watchdogDone = "done"

// watchdogKilled is the watchdog's exit status once it killed the
// command's group at the deadline redlock gave it.
const watchdogKilled = exitLockLost

// watchdogKilling is the line the watchdog writes to its standard output
// right before it kills the command's group at the deadline: redlock,
// seeing the command killed by SIGKILL, finds it there at once if the kill
// was the watchdog's.
const watchdogKilling = "killing"

// watchdogSaidWait bounds how long redlock looks for watchdogKilling once
// it saw the command killed: the line was written before the kill, so it
// is there unless the kill was someone else's.
const watchdogSaidWait = 20 * time.Millisecond

// watchdogKillAt begins what redlock writes to its watchdog each time the
// lock's deadline moves: the time, in Unix milliseconds, at which redlock
// would kill the command's group if the lock were not renewed by then.
const watchdogKillAt = "kill-at "

// watch is redlock's end of the pipe to its watchdog.
type watch struct {
	w *os.File
	// exited is closed when the watchdog exited; pid is its process;
	// killed, once exited is closed, says that it killed the group at the
	// deadline redlock last gave it.
	exited chan struct{}
	pid    int
	killed bool
	// said is the watchdog's standard output, where it writes
	// watchdogKilling; announced, that redlock read it there.
	said      *os.File
	announced bool
}

// didKill reports that the watchdog killed the command's group at the
// deadline: it said so, or it exited saying so.
func (w *watch) didKill() bool {
	return w.announced || w.killed
}

// saidKill reports whether the watchdog wrote that it kills the command's
// group, looking for the line for at most watchdogSaidWait.
func (w *watch) saidKill() bool {
	if !w.announced {
		var line [len(watchdogKilling) + 1]byte
		w.said.SetReadDeadline(time.Now().Add(watchdogSaidWait))
		n, _ := io.ReadFull(w.said, line[:])
		w.announced = string(line[:n]) == watchdogKilling+"\n"
	}
	return w.announced
}

// killAt tells the watchdog to kill the command's group at t unless told
// a later time first: a redlock that stops renewing the lock (stopped by
// SIGSTOP or Ctrl-Z, hung) cannot stop the command by the lock's deadline
// itself.
func (w *watch) killAt(t time.Time) {
	fmt.Fprintf(w.w, "%s%d\n", watchdogKillAt, t.UnixMilli())
}

// end tells the watchdog that redlock is done with the command.
func (w *watch) end() {
	w.w.WriteString(watchdogDone + "\n")
	w.w.Close()
	w.said.Close()
}

// startWatchdog starts a process, in a process group of its own, that
// kills the command's process group pgid with SIGKILL when this redlock
// dies while the command runs (SIGKILL, the OOM killer): the kernel then
// closes this process's end of a pipe to it, and nobody renews the lock;
// and when the time last given by watch.killAt passes, so that a redlock
// that stopped without dying does not let the command run on past the
// lock. The kernel itself kills only the command's own process (see
// dieWithRedlock), not what it started.
// It is armed from its start with the time killAt: a redlock stopped
// before it said any other still has the command killed then.
func startWatchdog(pgid int, killAt time.Time) (*watch, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe() // close-on-exec: the command does not hold it open
	if err != nil {
		return nil, err
	}
	defer r.Close()
	said, sayer, err := os.Pipe()
	if err != nil {
		w.Close()
		return nil, err
	}
	defer sayer.Close()
	cmd := exec.Command(exe, watchdogVerb, strconv.Itoa(pgid), strconv.FormatInt(killAt.UnixMilli(), 10))
	cmd.Stdin, cmd.Stdout = r, sayer
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		said.Close()
		return nil, err
	}
	wd := &watch{w: w, said: said, exited: make(chan struct{}), pid: cmd.Process.Pid}
	go func() {
		cmd.Wait()
		wd.killed = cmd.ProcessState.ExitCode() == watchdogKilled
		close(wd.exited)
	}()
	return wd, nil
}

// watchdog runs the hidden verb: it reads stdin line by line, and kills
// the process group args[0] with SIGKILL when stdin ends before redlock
// wrote watchdogDone, or when the last time redlock gave (args[1], in
// Unix milliseconds, then each watchdogKillAt) passes first, writing
// watchdogKilling to stdout before that kill. It ignores the signals that
// end redlock, which redlock forwards to the command itself.
func watchdog(stdin io.Reader, stdout io.Writer, args []string) int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM)
	if len(args) != 2 {
		return exitUsage
	}
	pgid, err := strconv.Atoi(args[0])
	first, ferr := strconv.ParseInt(args[1], 10, 64)
	if err != nil || ferr != nil || pgid <= 1 {
		return exitUsage
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(stdin); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	due := time.NewTimer(time.Until(time.UnixMilli(first)))
	for {
		select {
		case line, ok := <-lines:
			if line == watchdogDone {
				return exitOK
			}
			if !ok {
				syscall.Kill(-pgid, syscall.SIGKILL) // redlock died
				return exitOK
			}
			if ms, ok := strings.CutPrefix(line, watchdogKillAt); ok {
				if at, err := strconv.ParseInt(ms, 10, 64); err == nil {
					due.Reset(time.Until(time.UnixMilli(at)))
				}
			}
		case <-due.C:
			fmt.Fprintln(stdout, watchdogKilling)
			syscall.Kill(-pgid, syscall.SIGKILL) // redlock stopped renewing
			return watchdogKilled
		}
	}
}

package cli

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
	"unsafe"
)

// childWaitDelay bounds how long redlock waits, after the command exited, for
// the copying of its standard streams to end when they are not files (a
// background process the command left behind can hold them open forever).
const childWaitDelay = time.Second

// forwardedSignals are passed on to the command's process group. The first
// four also end a wait for the lock.
var forwardedSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2}

// terminating reports whether sig asks a process to end.
func terminating(sig os.Signal) bool {
	switch sig {
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM:
		return true
	}
	return false
}

// notifySignals starts catching the forwarded signals, except those the
// process ignores (nohup, a background job of a non-interactive shell): the
// command inherits their disposition and ignores them too.
func notifySignals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 8)
	var sigs []os.Signal
	for _, s := range forwardedSignals {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	signal.Notify(ch, sigs...)
	return ch, func() { signal.Stop(ch) }
}

// signalNumber returns sig's number, for exit statuses.
func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return int(syscall.SIGTERM)
}

// child is the command `redlock run` runs, leader of its own process group.
type child struct {
	cmd  *exec.Cmd
	pgid int
	// watchdog watches the group (startWatchdog); nil without one.
	watchdog *watch
	// tty is the terminal whose foreground the command was given, or -1.
	tty int
}

// startChild starts argv in a new process group, so that the whole group can
// be signalled, with the given environment and streams. When standard input
// is the terminal and redlock is in its foreground, the command's group is
// put in the foreground instead, so that it can read the terminal and gets
// the terminal's signals (Ctrl-C) directly.
func startChild(argv, env []string, s streams) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.stdin, s.stdout, s.commandStderr()
	cmd.Env = env
	cmd.WaitDelay = childWaitDelay
	attr := &syscall.SysProcAttr{Setpgid: true}
	dieWithRedlock(attr)
	tty := -1
	if f, ok := s.stdin.(*os.File); ok && f.Fd() == 0 {
		if fg, ok := foregroundGroup(0); ok && fg == syscall.Getpgrp() {
			attr.Foreground, attr.Ctty, tty = true, 0, 0
		}
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: cmd, pgid: cmd.Process.Pid, tty: tty}, nil
}

// watch starts the watchdog of the command's process group, armed to
// kill it at killAt (see startWatchdog), or says why it could not.
func (c *child) watch(s streams, name string, killAt time.Time) {
	w, err := startWatchdog(c.pgid, killAt)
	if err != nil {
		sayf(s.stderr, slog.LevelWarn, name, "no watchdog for the command's process group: %v; "+
			"should redlock be killed or stopped, the processes the command started outlive it", err)
		return
	}
	c.watchdog = w
}

// killAt tells the watchdog when to kill the group unless told later (see
// watch.killAt).
func (c *child) killAt(t time.Time) {
	if c.watchdog != nil {
		c.watchdog.killAt(t)
	}
}

// watchdogExited returns a channel closed if the watchdog exits; nil
// without one.
func (c *child) watchdogExited() <-chan struct{} {
	if c.watchdog == nil {
		return nil
	}
	return c.watchdog.exited
}

// endWatch ends the watchdog's watch: it kills nothing.
func (c *child) endWatch() {
	if c.watchdog != nil {
		c.watchdog.end()
	}
}

// startErrorCode returns the exit status for a command that could not start:
// 127 when it was not found, 126 otherwise, as shells do.
func startErrorCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitCannotExecute
}

// signal sends sig to the command's whole process group. A group that has
// already exited is not an error.
func (c *child) signal(sig os.Signal) {
	syscall.Kill(-c.pgid, sig.(syscall.Signal))
}

// groupAlive reports whether any process of the command's group is left.
func (c *child) groupAlive() bool {
	return syscall.Kill(-c.pgid, 0) == nil
}

// status returns the command's exit status: its exit code, or 128+n when it
// was killed by signal n.
func (c *child) status() int {
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return c.cmd.ProcessState.ExitCode()
}

// killedBy reports whether the command was killed by sig.
func (c *child) killedBy(sig syscall.Signal) bool {
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// restoreTerminal takes the terminal's foreground back from the command
// (after it ended or stopped), if it has it still: a shell that took it
// back meanwhile (redlock's job stopped, or put in the background) keeps
// it.
func (c *child) restoreTerminal() {
	if c.tty < 0 {
		return
	}
	if fg, ok := foregroundGroup(c.tty); !ok || fg != c.pgid {
		return
	}
	// A process outside the foreground group that changes it gets SIGTTOU,
	// which would stop it, unless it ignores the signal.
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	pgrp := int32(syscall.Getpgrp())
	syscall.Syscall(syscall.SYS_IOCTL, uintptr(c.tty), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
}

// foregroundGroup returns the foreground process group of the terminal open
// on fd, and false when fd is not a terminal.
func foregroundGroup(fd int) (int, bool) {
	var pgrp int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp)))
	return int(pgrp), errno == 0
}

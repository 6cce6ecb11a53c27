package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// How redlock ends once Run returned (see Exit).
const (
	// endUndecided: by SIGINT if redlock received one, else by its status.
	endUndecided int32 = iota
	// endByStatus: by its exit status, whatever redlock received.
	endByStatus
	// endBySIGINT: by SIGINT, sent to redlock alone.
	endBySIGINT
	// endByGroupSIGINT: by SIGINT, sent to redlock's whole process group.
	endByGroupSIGINT
)

// ending is how redlock ends, decided by how the command that 'redlock run'
// ran ended (see commandEnded); endUndecided when none ran.
var ending atomic.Int32

// Exit ends redlock with code, the exit status Run returned, or by SIGINT
// where a shell must see an interruption. A shell running redlock in a
// script (or a loop) goes on to the next command unless that command was
// killed by SIGINT: one that caught the SIGINT and exited 130 counts as
// having handled it. So redlock ends by SIGINT, once everything is released,
// when it received SIGINT and ran no command (a wait for the lock, a verb),
// or when the command it ran was killed by SIGINT; and by its status when
// the command exited otherwise, as the shell would have gone on after the
// command run directly. A command given the terminal (see startChild) gets
// Ctrl-C alone: neither redlock nor the shell running it hear it, so
// redlock then sends SIGINT to its whole process group, as the terminal
// would have. The status a shell reports is the same, 130.
func Exit(ctx context.Context, code int) {
	switch ending.Load() {
	case endByGroupSIGINT:
		raiseSIGINT(0)
	case endBySIGINT:
		raiseSIGINT(os.Getpid())
	case endUndecided:
		if receivedSIGINT(ctx) {
			raiseSIGINT(os.Getpid())
		}
	}
	os.Exit(code)
}

// commandEnded decides how redlock ends (see Exit) after the command ch
// ended, with the lock still held or released as planned.
func commandEnded(ctx context.Context, ch *child) {
	switch {
	case !ch.killedBy(syscall.SIGINT):
		ending.Store(endByStatus)
	case ch.tty >= 0 && !receivedSIGINT(ctx):
		ending.Store(endByGroupSIGINT) // Ctrl-C at the terminal the command had
	default:
		ending.Store(endBySIGINT)
	}
}

// receivedSIGINT reports whether SIGINT ended ctx (see SignalContext).
func receivedSIGINT(ctx context.Context) bool {
	var s signalled
	return errors.As(context.Cause(ctx), &s) && s.sig == syscall.SIGINT
}

// raiseSIGINT sends SIGINT to pid (0: redlock's process group), which ends
// redlock by it.
func raiseSIGINT(pid int) {
	signal.Reset(syscall.SIGINT)
	syscall.Kill(pid, syscall.SIGINT)
	// The signal is delivered as the call returns; this is only in case it
	// is held up.
	time.Sleep(time.Second)
}

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

// interruptedAtTerminal notes that Ctrl-C at the terminal killed the command
// that 'redlock run' gave the terminal to (see Exit).
var interruptedAtTerminal atomic.Bool

// Exit ends redlock with code, the exit status Run returned, unless Ctrl-C at
// the terminal ended what Run did: then it ends by SIGINT, as the command
// would have, run without redlock. A shell running redlock in a script
// stops the script only when it got the SIGINT itself and its command was
// killed by it, not when the command caught it and exited 130. Ctrl-C on a
// command that 'redlock run' gave the terminal to reaches neither redlock
// nor the shell, so redlock sends SIGINT to its own process group, as the
// terminal would have. Everything was released by then, and the status a
// shell reports is the same, 130. Elsewhere (no terminal, a signal sent by
// another process) redlock exits with code.
func Exit(ctx context.Context, code int) {
	var s signalled
	interrupted := errors.As(context.Cause(ctx), &s) && s.sig == syscall.SIGINT && inForeground()
	if commandInterrupted := interruptedAtTerminal.Load(); interrupted || commandInterrupted {
		signal.Reset(syscall.SIGINT)
		if commandInterrupted {
			syscall.Kill(0, syscall.SIGINT) // the whole group, redlock too
		} else {
			syscall.Kill(os.Getpid(), syscall.SIGINT) // the group has had its own
		}
		// The signal is delivered as the call returns; this is only in
		// case it is held up.
		time.Sleep(time.Second)
	}
	os.Exit(code)
}

// inForeground reports whether standard input is a terminal whose
// foreground is redlock's process group: what Ctrl-C there interrupts.
func inForeground() bool {
	fg, ok := foregroundGroup(0)
	return ok && fg == syscall.Getpgrp()
}

package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// signalled is the cause of a context that a signal ended (see
// SignalContext).
type signalled struct{ sig os.Signal }

func (s signalled) Error() string { return "received " + s.sig.String() }

// SignalContext returns a context that the first SIGHUP, SIGINT, SIGQUIT or
// SIGTERM ends, with the signal as its cause: a verb waiting for a lock
// then stops, releases what it took and exits 128+n for signal n, as a
// shell reports a command the signal killed. Signals the process ignores
// (nohup) stay ignored. stop stops catching them.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	for _, sig := range forwardedSignals {
		if terminating(sig) && !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(signalled{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(context.Canceled)
	}
}

// interruptedExit returns the exit code of a wait that ctx's end
// interrupted: 128+n when signal n ended it (see SignalContext), else 130,
// as for Ctrl-C.
func interruptedExit(ctx context.Context) int {
	var s signalled
	if errors.As(context.Cause(ctx), &s) {
		return exitSignalBase + signalNumber(s.sig)
	}
	return exitInterrupted
}

// catchSIGPIPE makes a write to stdout or stderr, when it is a pipe whose
// reader left, fail with EPIPE instead of ending the process by SIGPIPE,
// until stop is called: a verb can then undo what nobody received, or go
// on without its messages.
func catchSIGPIPE() (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGPIPE)
	return func() { signal.Stop(sigs) }
}

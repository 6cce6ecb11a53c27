package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/wait"
)

// repeated is the retry loop of an acquisition that is not a mutex's: a
// permit of a semaphore (permits.go) or a shared lock (shared.go). It has no
// handoff and no queue of waiting clients on the nodes. This client's
// goroutines waiting for a permit take turns, first come first served, and
// the one whose turn it is tries, then waits for a release of one of the
// keys it tried or a retry delay; readers, who do not split votes among
// themselves, each try and wait on their own, and every release wakes them
// all.
type repeated struct {
	c   *Client
	ctx context.Context
	cfg lockConfig
	// key names what is acquired, in errors and in turns.
	key string
	// turns are those that this client's goroutines take for key
	// (waiters.go), nil for no turn, in which case every release wakes the
	// call.
	turns *wait.Turns
	// keys returns the keys whose releases may let the next try succeed.
	keys func() []string
	// try makes one attempt.
	try func() (*Lock, error)
	// freed, when set, returns a channel closed by a release in this
	// client that may let the next try succeed, and the function that
	// stops watching for it.
	freed func() (<-chan struct{}, func())
}

// acquire tries once, or until it succeeds, the context ends or the retry
// strategy gives up.
func (r *repeated) acquire(once bool) (*Lock, error) {
	if once {
		return r.try()
	}
	if r.turns == nil {
		return r.run(false)
	}
	turn := r.turns.Take(r.ctx, r.key, nil)
	if !turn.Taken {
		return nil, r.c.notAsked(r.key, r.ctx)
	}
	defer r.turns.GiveBack(r.key, false)
	return r.run(turn.Queued)
}

// run tries, then waits for a release or a retry delay, until a try
// succeeds, the context ends or the retry strategy gives up. A call that
// queued behind another goroutine of this client listens for releases from
// before its first try, since that goroutine may have just taken what it
// wants; an uncontended call listens only once a try failed.
func (r *repeated) run(queued bool) (*Lock, error) {
	wake, stop := wait.NoWakeup, func() {}
	if queued {
		wake, stop = r.c.waker.ListenForAll(r.keys(), r.turns == nil)
	}
	defer func() { stop() }()
	for attempt := 1; ; attempt++ {
		lock, err := r.try()
		if lock != nil || failFast(err) {
			return lock, err
		}
		if r.ctx.Err() != nil {
			return nil, withCause(err, r.ctx)
		}
		if wake == wait.NoWakeup {
			// Listen from before the wait that follows the first failed
			// try: a release during the try may be missed, and the retry
			// delay covers it.
			wake, stop = r.c.waker.ListenForAll(r.keys(), r.turns == nil)
		}
		delay, again := r.cfg.retry.NextDelay(attempt)
		if !again {
			return nil, err
		}
		if !r.wait(wake, delay) {
			return nil, withCause(err, r.ctx)
		}
	}
}

// wait waits for a release announced to wake, one in this client, or the
// retry delay, and reports whether the context is still live.
func (r *repeated) wait(wake *wait.Wakeup, delay time.Duration) bool {
	var freed <-chan struct{}
	stop := func() {}
	if r.freed != nil {
		freed, stop = r.freed()
	}
	defer stop()
	live, _ := waitForRelease(r.ctx, wake, freed, nil, delay)
	return live
}

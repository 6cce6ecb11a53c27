package redlock

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wait"
	"github.com/redlock-go/redlock/internal/wire"
)

// RetryStrategy decides how long Acquire waits between attempts. It holds no
// per-call state, so one value may be shared by all calls and goroutines.
type RetryStrategy interface {
	// NextDelay returns the pause before attempt number attempt (2 for the
	// first retry), or false to give up.
	NextDelay(attempt int) (time.Duration, bool)
}

type exponential struct{ base, max time.Duration }

// ExponentialJitter doubles the delay from base after every attempt up to max,
// and waits a random time between half of it and all of it.
func ExponentialJitter(base, max time.Duration) RetryStrategy {
	if base <= 0 {
		base = time.Millisecond
	}
	if max < base {
		max = base
	}
	return exponential{base: base, max: max}
}

func (e exponential) NextDelay(attempt int) (time.Duration, bool) {
	d := e.max
	if shift := attempt - 2; shift < 30 {
		if s := e.base << max(shift, 0); s < d {
			d = s
		}
	}
	return randomBetween(d/2, d), true
}

func randomBetween(min, max time.Duration) time.Duration {
	if max <= min {
		return min
	}
	return min + rand.N(max-min+1)
}

// shape is what the retry loop needs of one kind of acquisition: a lock
// (acquisition), a permit or a reader (repeated), or the locks of several
// keys (multiAcquisition). Each supplies only what differs: its attempt,
// and what its waits end on.
type shape[T any] interface {
	// try makes one attempt.
	try() (T, error)
	// failed is told of a failed attempt, before the wait that follows:
	// a shape starts listening then for the releases it waits for.
	failed()
	// wait waits up to delay for a release that may let the next attempt
	// succeed (see waitForRelease), and reports whether the context is
	// still live and whether a release announcement named this client.
	wait(delay time.Duration) (live, named bool)
	// behind reports that the nodes queued this client behind others that
	// the next releases name: it is woken when its turn comes.
	behind() bool
	// notAsked is the error of a call that gave up before its first
	// attempt.
	notAsked() error
}

// retryLoop is the Redlock retry loop of every shape: wait for a release
// or a delay, try, done if won, back off. It returns the first attempt
// that succeeds, or the last one's error once an attempt fails for a
// reason no retry fixes, ctx ends, or retry gives up. waitFirst makes it
// wait before the first attempt too.
func retryLoop[T any](ctx context.Context, retry RetryStrategy, s shape[T], waitFirst bool) (T, error) {
	var zero T
	var lastErr error
	named := false
	for attempt := 1; ; attempt++ {
		if waitFirst || attempt > 1 {
			delay, again := retry.NextDelay(attempt)
			if !again {
				return zero, gaveUp(lastErr, s)
			}
			var live bool
			if live, named = s.wait(paced(delay, named, s.behind())); !live {
				return zero, withCause(gaveUp(lastErr, s), ctx)
			}
		}
		v, err := s.try()
		switch {
		case err == nil:
			return v, nil
		case failFast(err):
			return zero, err
		case ctx.Err() != nil:
			return zero, withCause(err, ctx)
		}
		lastErr = err
		s.failed()
	}
}

// gaveUp returns the error of a call that stops waiting: the last
// attempt's, or the shape's notAsked when it made none.
func gaveUp[T any](lastErr error, s shape[T]) error {
	if lastErr == nil {
		return s.notAsked()
	}
	return lastErr
}

// paced returns the pause before the next attempt: the retry strategy's
// delay, shortened after an attempt that a release named this client for
// failed (named), and lengthened while the nodes queue this client behind
// others (behind).
func paced(delay time.Duration, named, behind bool) time.Duration {
	if named {
		// The last attempt followed a release that named this client, and
		// failed: most likely it split the votes with the other client
		// named, or met a node whose release was still on its way. Try
		// again soon, at a random moment so as not to meet it again.
		delay = min(delay, randomBetween(time.Millisecond, splitRetryMax))
	}
	if behind {
		// Others are first in line on the nodes: the releases will name
		// them, and this client once its turn comes. Try now and then
		// only, in case a wake-up is lost or the lock expires unreleased.
		delay = max(delay, randomBetween(behindWait/2, behindWait))
	}
	return delay
}

// splitRetryMax bounds the pause before a waiter tries again after an
// attempt that a release woke it for failed (see paced).
const splitRetryMax = 10 * time.Millisecond

// behindWait bounds the pause of a listening waiter that the nodes queued
// behind clients that the next release names (queuePlace.behind): it is
// woken when its turn comes, and tries meanwhile at about this pace only,
// in case the lock expires unreleased or a wake-up is lost, which this
// much slower polling costs in latency. Well within wire.QueueLasts, so
// that its attempts keep its place in the queue.
const behindWait = wire.QueueLasts / 2

// waitForRelease waits up to delay for a release, or for ctx to end, and
// reports whether ctx is still live, and whether a release announcement
// named this client (wake.Now). A waiter that registered with the waker
// before its last attempt wakes on any release announced since that names
// it or nobody (see wait.Waker); freed, when not nil, is closed by a
// release of this client, and sent when such a release took the waiter's
// attempt with it (handoff.go).
func waitForRelease(ctx context.Context, wake *wait.Wakeup, freed, sent <-chan struct{}, delay time.Duration) (live, named bool) {
	t := nodes.GetTimer(delay)
	defer nodes.PutTimer(t)
	select {
	case <-wake.Now(): // nil without a waker: never ready
		return true, true
	case <-freed:
		return true, false
	case <-sent:
		return true, false
	case <-t.C:
		return true, false
	case <-ctx.Done():
		return false, false
	}
}

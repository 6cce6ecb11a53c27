package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wait"
)

// Acquire takes the lock named key, retrying with random delays until it is
// acquired or ctx ends. It blocks. On failure the error wraps ErrNotAcquired
// (with each node's outcome in a *QuorumError) and, when ctx ended, ctx's
// error too: errors.Is(err, context.DeadlineExceeded) tells "gave up waiting"
// apart from a failed attempt with a retry strategy that stopped. When so
// many nodes refuse for a reason no retry fixes (an ACL, a replica, a key of
// the wrong type) that no quorum is possible, it fails at once, with
// errors.Is(err, ErrInvalidOptions) and the first such node named. Bad input
// fails at once, before any request: a nil ctx, an empty key or one above
// 4096 bytes (ErrInvalidKey), a TTL that leaves no validity or exceeds the
// recovery delay (ErrInvalidTTL).
//
// The returned lock is valid until Lock.Until; the holder must finish its
// work by then, extend it, or use WithAutoRenew and watch Lock.Done.
//
// Goroutines of one Client that wait for the same key are served in the
// order they called Acquire: only the first of them tries the nodes, woken
// by the release announcements (see Conn) or its retry delay.
func (c *Client) Acquire(ctx context.Context, key string, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, key, false, opts)
}

// TryAcquire makes exactly one attempt to take the lock named key and returns
// at once: within the per-node timeout, twice when a failed attempt must be
// cleaned up on a silent node. Its errors are those of Acquire. Unlike
// Acquire, it does not queue behind the client's other goroutines waiting for
// the same key.
func (c *Client) TryAcquire(ctx context.Context, key string, opts ...LockOption) (*Lock, error) {
	return c.acquire(ctx, key, true, opts)
}

func (c *Client) acquire(ctx context.Context, name string, once bool, opts []LockOption) (*Lock, error) {
	if err := checkContext(ctx); err != nil {
		return nil, err
	}
	key, cfg, err := c.lockRequest(name, opts)
	if err != nil {
		return nil, err
	}
	if c.tel == nil {
		return c.acquireKey(ctx, key, cfg, once, nil)
	}
	ctx, call := c.tel.StartAcquire(ctx, key, cfg.ttl, once)
	lock, err := c.acquireKey(ctx, key, cfg, once, call)
	endAcquire(call, lock, err)
	return lock, err
}

// acquireKey takes the lock on key, the wire's, once or until ctx ends;
// call, when not nil, observes it (telemetry.go).
func (c *Client) acquireKey(ctx context.Context, key string, cfg lockConfig, once bool, call *telemetry.Call) (*Lock, error) {
	switch {
	case cfg.limited:
		return c.acquirePermit(ctx, key, cfg, once, call)
	case cfg.shared:
		return c.acquireShared(ctx, key, cfg, once, call)
	}
	if once {
		lock, err := c.attempt(ctx, key, cfg.ttl, cfg.autoRenew, nil)
		failFast(err)
		noteAttempt(call, lock, err)
		return lock, err
	}
	a := acquisition{c: c, ctx: ctx, key: key, cfg: cfg, call: call, stopListening: func() {}}
	if err := a.takeTurn(); err != nil {
		return nil, err
	}
	lock, err := retryLoop(ctx, cfg.retry, shape[*Lock](&a), a.waitFirst)
	a.end(lock)
	return lock, err
}

// lockRequest checks a lock name and the options of one call, and returns
// the key on the wire and the call's settings.
func (c *Client) lockRequest(name string, opts []LockOption) (string, lockConfig, error) {
	cfg := c.lockOptions(opts)
	key, err := c.lockKey(name)
	if err != nil {
		return "", cfg, err
	}
	if cfg.limited {
		if err := c.checkLimit(name, cfg.limit, cfg.shared); err != nil {
			return "", cfg, err
		}
	}
	if err := c.checkLockTTL(cfg.ttl); err != nil {
		return "", cfg, err
	}
	cfg.ttl = cfg.ttl.Truncate(time.Millisecond)
	return key, cfg, nil
}

// lockOptions returns the settings of one call: the client's defaults,
// changed by opts, in order.
func (c *Client) lockOptions(opts []LockOption) lockConfig {
	cfg := lockConfig{ttl: c.opts.TTL, retry: c.opts.Retry}
	if len(opts) > 0 {
		// Options take a pointer, which escapes: a call without options
		// allocates none.
		withOpts := cfg
		for _, o := range opts {
			o.apply(&withOpts)
		}
		cfg = withOpts
	}
	return cfg
}

// acquisition is one Acquire call that has the turn on its key: the only
// goroutine of this client that tries for the key until it gives the turn
// back (waiters.go).
type acquisition struct {
	c   *Client
	ctx context.Context
	key string
	cfg lockConfig
	// turn is how the turn came: the lock may be held by this client.
	turn wait.Turn
	// offer is this call's attempt, offered to go out with this client's
	// release of the lock (handoff.go); nil once settled.
	offer *handoff
	// carried is the offer once a release took it with it: the attempt is
	// under way, and run collects it instead of trying.
	carried *handoff
	// wake signals release announcements (wake.go); nil while not
	// listening.
	wake          *wait.Wakeup
	stopListening func()
	waitFirst     bool // wait for a release or a retry delay before trying
	// place is this client's place in the key's queue: a refused attempt
	// puts it there, and later ones keep it there (see wire.QueueKeys).
	place queuePlace
	// call observes the call's attempts; nil without telemetry.
	call *telemetry.Call
}

// takeTurn waits for the turn on the key behind the client's other
// goroutines waiting for it. Its error is that of an Acquire whose context
// ended in the queue.
func (a *acquisition) takeTurn() error {
	c, ctx, key, cfg := a.c, a.ctx, a.key, a.cfg
	// An attempt is offered to this client's release only where a goroutine
	// of this client has the key's turn or holds its lock: a key nobody
	// here holds is tried at once.
	if c.waiters.Busy(key) {
		a.offer = c.newHandoff(ctx, key, cfg.ttl, cfg.autoRenew)
	}
	a.turn = c.waiters.Take(ctx, key, a.offer.asOffer())
	if !a.turn.Taken {
		return c.notAsked(key, ctx)
	}
	// A waiter listens for release announcements from before its attempt,
	// so that a release between a failed attempt and the wait is not
	// missed. An uncontended call does not listen until its first attempt
	// failed, nor does one whose turn starts while this client holds the
	// lock: that lock's release reaches it in-process.
	if a.turn.Queued && !a.turn.HeldHere {
		a.listen()
	}
	// When the turn comes from a goroutine of this client that has just
	// acquired the lock, it is held: wait for its release before trying,
	// with the attempt offered to go out with that release.
	a.waitFirst = a.turn.HeldHere
	if !a.turn.HeldHere {
		if a.offer.Withdraw() {
			a.offer = nil // not taken, and now never will be
		} else {
			// The lock was released while the turn came, and the release
			// took the attempt with it.
			a.waitFirst = true
		}
	}
	return nil
}

// wait waits up to delay for a release of the key, by this client or
// announced by the nodes, or for the release that takes this call's offer
// with it (offered for the first wait only).
func (a *acquisition) wait(delay time.Duration) (live, named bool) {
	freed := a.turn.Freed
	a.turn.Freed = nil // a closed channel: use it once
	offer := a.offer
	a.offer = nil
	wake := a.wake
	if wake == nil {
		wake = wait.NoWakeup
	}
	live, named = waitForRelease(a.ctx, wake, freed, offer.sentOrNil(), delay)
	if offer != nil && !offer.Withdraw() {
		a.carried = offer // the release took the attempt with it
		return true, false
	}
	return live, named
}

// behind reports that the nodes queued this client behind others that the
// next releases name, while it listens for them.
func (a *acquisition) behind() bool {
	return a.place.behind && a.wake != nil && a.wake != wait.NoWakeup
}

// try makes one attempt, or collects the one a release carried.
func (a *acquisition) try() (*Lock, error) {
	var lock *Lock
	var err error
	if h := a.carried; h != nil {
		a.carried = nil
		<-h.sent
		lock, err = h.collect()
	} else {
		lock, err = a.c.attempt(a.ctx, a.key, a.cfg.ttl, a.cfg.autoRenew, &a.place)
	}
	failFast(err)
	noteAttempt(a.call, lock, err)
	return lock, err
}

// failed starts listening for the key's releases after a failed attempt.
func (a *acquisition) failed() { a.listen() }

// notAsked is the error of a call that gave up before its first attempt.
func (a *acquisition) notAsked() error { return a.c.notAsked(a.key, a.ctx) }

// listen starts listening for release announcements of the key, once.
func (a *acquisition) listen() {
	if a.wake == nil {
		a.wake, a.stopListening = a.c.waker.ListenFor(a.key)
	}
}

// end stops listening and gives the turn back, telling the next in line
// whether the lock is now held here. An offer that a release took with it
// as the call gave up is seen through, and its lock, if it won, released.
func (a *acquisition) end(acquired *Lock) {
	a.stopListening()
	if a.offer != nil && acquired == nil && !a.offer.Withdraw() {
		<-a.offer.sent
		if lock, err := a.offer.collect(); err == nil {
			lock.Release(context.WithoutCancel(a.ctx))
		}
	}
	holding := a.c.waiters.GiveBack(a.key, acquired != nil)
	if acquired != nil {
		acquired.holding = holding
	}
}

// notAsked is the error of an Acquire whose context ended before it asked
// the nodes: it had ended already, or the call was queued behind another
// goroutine of this client.
func (c *Client) notAsked(key string, ctx context.Context) error {
	return &QuorumError{Op: "acquire", Key: key, Quorum: c.quorum, Nodes: c.unasked(), Err: ErrNotAcquired, Cause: ctx.Err()}
}

// withCause adds ctx's error to a QuorumError so that errors.Is sees both.
// The QuorumError may be wrapped already: the errors that wrap one make
// their text when it is read (see detailed), so that it shows the cause.
func withCause(err error, ctx context.Context) error {
	if qe := quorumError(err); qe != nil && qe.Cause == nil {
		qe.Cause = ctx.Err()
	}
	return err
}

// detailed is an error that says more before the error it wraps. Its text
// is made when read, not when it is made: withCause may complete the
// *QuorumError it wraps later.
type detailed struct {
	detail string
	err    error
}

// Error returns the detail, then the wrapped error's text.
func (e *detailed) Error() string { return e.detail + ": " + e.err.Error() }

// Unwrap returns the wrapped error.
func (e *detailed) Unwrap() error { return e.err }

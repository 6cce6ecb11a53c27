package redlock

import (
	"context"
	"time"
)

// Acquire takes the lock named key, retrying with random delays until it is
// acquired or ctx ends. It blocks. On failure the error wraps ErrNotAcquired
// (with each node's outcome in a *QuorumError) and, when ctx ended, ctx's
// error too: errors.Is(err, context.DeadlineExceeded) tells "gave up waiting"
// apart from a failed attempt with a retry strategy that stopped.
//
// The returned lock is valid until Lock.Until; the holder must finish its
// work by then, extend it, or use WithAutoRenew and watch Lock.Done.
//
// Goroutines of one Client that wait for the same key are served in the
// order they called Acquire: only the first of them tries the nodes, woken
// by the release announcements (see notifier) or its retry delay.
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
	cfg := lockConfig{ttl: c.opts.TTL, retry: c.opts.Retry}
	for _, o := range opts {
		o(&cfg)
	}
	key, err := c.lockKey(name)
	if err != nil {
		return nil, err
	}
	ttl := cfg.ttl.Truncate(time.Millisecond)
	if err := c.checkLockTTL(ttl); err != nil {
		return nil, err
	}
	if once {
		return c.attempt(ctx, key, ttl, cfg.autoRenew)
	}
	// One goroutine of this client at a time tries for key; the others queue
	// behind it in order (see turns).
	// An attempt is offered to this client's release only where a goroutine
	// of this client has the key's turn or holds its lock: a key nobody
	// here holds is tried at once.
	var offer *handoff
	if c.turns.busy(key) {
		offer = c.newHandoff(ctx, key, ttl, cfg.autoRenew)
	}
	turn := c.turns.take(ctx, key, offer)
	if !turn.taken {
		return nil, c.notAsked(key, ctx)
	}
	var acquired *Lock
	defer func() {
		if offer != nil && acquired == nil && !offer.withdraw() {
			// A release took the attempt with it as this call gave up: see
			// the attempt through, and undo it if it won.
			<-offer.sent
			if lock, err := offer.collect(); err == nil {
				lock.Release(context.WithoutCancel(ctx))
			}
		}
		freed := c.turns.giveBack(key, acquired != nil)
		if acquired != nil {
			acquired.freed = freed
		}
	}()
	// A waiter listens for release announcements from before its attempt,
	// so that a release between a failed attempt and the wait is not missed.
	// An uncontended call does not listen until its first attempt failed,
	// nor does one whose turn starts while this client holds the lock: that
	// lock's release reaches it in-process (see turns and handoff).
	var wake chan struct{}
	if turn.queued && !turn.heldHere {
		var stop func()
		wake, stop = c.listenFor(key)
		defer stop()
	}
	// When the turn comes from a goroutine of this client that has just
	// acquired the lock, it is held: wait for its release before trying,
	// and offer the attempt to go out with that release (see handoff).
	wait := turn.heldHere
	if !turn.heldHere {
		if offer.withdraw() {
			offer = nil // not taken, and now never will be
		} else {
			// The lock was released while the turn came, and the release
			// took the attempt with it.
			wait = true
		}
	}
	var lastErr error
	for attempt := 1; ; attempt++ {
		var lock *Lock
		var err error
		tried := false
		if wait {
			delay, again := cfg.retry.NextDelay(attempt)
			if !again {
				if lastErr == nil {
					return nil, c.notAsked(key, ctx)
				}
				return nil, lastErr
			}
			freed := turn.freed
			turn.freed = nil // a closed channel: use it once
			h := offer
			offer = nil // offered for the first wait only
			woke := c.waitForRelease(ctx, wake, freed, h.sentOrNil(), delay)
			if h != nil && !h.withdraw() {
				// The release took the attempt with it.
				<-h.sent
				lock, err = h.collect()
				tried = true
			} else if !woke {
				if lastErr == nil {
					return nil, c.notAsked(key, ctx)
				}
				return nil, withCause(lastErr, ctx)
			}
		}
		if !tried {
			lock, err = c.attempt(ctx, key, ttl, cfg.autoRenew)
		}
		if err == nil {
			acquired = lock
			return lock, nil
		}
		if ctx.Err() != nil {
			return nil, withCause(err, ctx)
		}
		lastErr, wait = err, true
		if wake == nil {
			var stop func()
			wake, stop = c.listenFor(key)
			defer stop()
		}
	}
}

// notAsked is the error of an Acquire whose context ended before it asked
// the nodes: it was queued behind another goroutine of this client.
func (c *Client) notAsked(key string, ctx context.Context) error {
	return &QuorumError{Op: "acquire", Key: key, Quorum: c.quorum, Nodes: c.unasked(), Err: ErrNotAcquired, Cause: ctx.Err()}
}

// withCause adds ctx's error to a QuorumError so that errors.Is sees both.
func withCause(err error, ctx context.Context) error {
	if qe, ok := err.(*QuorumError); ok && qe.Cause == nil {
		qe.Cause = ctx.Err()
	}
	return err
}

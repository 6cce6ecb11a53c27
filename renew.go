package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Renewal timing, as fractions of the TTL.
const (
	// renewAfter: a renewing lock is extended once a third of its TTL has
	// passed, which leaves two more tries' worth of time before the deadline
	// when a node is slow or an attempt fails.
	renewAfterDivisor = 3
	// renewRetryDivisor: after a failed extension the next try comes a tenth
	// of the TTL later, so a brief blip is ridden out well before the deadline
	// without hammering the nodes.
	renewRetryDivisor = 10
)

// renew extends the lock in the background until it is released or lost, or
// its Client is closed, for the TTL of its grant or last extension, once a
// third of it has passed. It never declares the loss itself: the deadline
// timer armed by watchLocked does, at the validity deadline at the latest,
// and Extend does earlier when a majority of nodes no longer holds the lock.
// stop is the renewal's channel, which stopRenewalLocked closes, and
// extended tells of an extension by Extend: passed in, not read here, since
// they may be closed and cleared before this runs.
func (l *Lock) renew(stop, extended <-chan struct{}) {
	timer := time.NewTimer(l.renewalDue())
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-l.client.closed:
			return
		case <-extended:
			timer.Reset(l.renewalDue())
			continue
		case <-timer.C:
		}
		ttl := l.ttlNow()
		err := l.extend(context.Background(), ttl, true)
		switch {
		case err == nil:
			timer.Reset(l.renewalDue())
		case errors.Is(err, ErrNotExtended):
			timer.Reset(ttl / renewRetryDivisor)
		default: // lost, released, or the extension limit: nothing more to do
			return
		}
	}
}

// renewalDue returns how long until the lock's next renewal: a third of the
// TTL of its grant or last extension after that began.
func (l *Lock) renewalDue() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Until(l.until) - l.lastTTL*(renewAfterDivisor-1)/renewAfterDivisor
}

// Do acquires the lock named key (blocking like Acquire), runs fn while
// renewing the lock in the background, and releases it when fn returns.
// fn's context is cancelled, with ErrLockLost as its cause, as soon as the
// lock is lost; fn must then stop touching the protected resource. fn gets
// the Lock from its context with LockFromContext, for its fencing token
// (Lock.Fence) to send with each write to the resource.
//
// Do returns fn's error, joined with ErrLockLost if the lock was lost while
// fn ran, and with the release error if the release failed. When fn
// panics, Do releases the lock and the panic goes on. A nil fn fails with
// ErrInvalidOptions, and takes nothing.
func (c *Client) Do(ctx context.Context, key string, fn func(ctx context.Context) error, opts ...LockOption) error {
	if fn == nil {
		return fmt.Errorf("%w: Do's fn is nil", ErrInvalidOptions)
	}
	lock, err := c.Acquire(ctx, key, append(opts[:len(opts):len(opts)], WithAutoRenew())...)
	if err != nil {
		return err
	}
	fnCtx, cancel := lock.context(ctx)
	returned := false
	defer func() {
		if !returned { // fn panicked: renewed, the lock would stand for good
			cancel()
			lock.Release(ctx)
		}
	}()
	fnErr := fn(context.WithValue(fnCtx, lockContextKey{}, lock))
	returned = true
	cancel()
	lostErr := lock.Err()
	releaseErr := lock.Release(ctx)
	if lostErr != nil {
		return errors.Join(fnErr, lostErr)
	}
	return errors.Join(fnErr, releaseErr)
}

// lockContextKey is the context key under which Do hands fn its Lock.
type lockContextKey struct{}

// LockFromContext returns the Lock that Do holds while it runs fn, given
// fn's context or one derived from it, and false for any other context.
// Under nested calls of Do it returns the innermost call's lock. fn reads the
// lock (Fence, Until, Key, Nodes) and may Extend it; Do renews and releases
// it, so fn must not Release it (Do would then return ErrReleased).
func LockFromContext(ctx context.Context) (*Lock, bool) {
	if ctx == nil {
		return nil, false
	}
	l, ok := ctx.Value(lockContextKey{}).(*Lock)
	return l, ok
}

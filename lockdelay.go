package redlock

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// MaxLockDelay is the longest lock-delay WithLockDelay accepts, Chubby's
// bound: a delay is meant to let a lost holder's requests in flight drain,
// which takes seconds, and every longer delay is a longer outage after a
// crash.
const MaxLockDelay = time.Minute

// ErrInvalidLockDelay means a lock-delay (WithLockDelay) is negative, above
// MaxLockDelay, or, added to the lock's TTL, above Options.RecoveryDelay
// while the restart quarantine is on: a node that restarted without its
// data could then grant the lock again before the delay is over. Added to a
// TTL beyond the longest time.Duration, it is ErrInvalidTTL as well.
var ErrInvalidLockDelay = errors.New("redlock: invalid lock-delay")

// WithLockDelay gives the lock a lock-delay, as Chubby's: when the lock
// ends without a release (its holder died, paused, or lost contact with
// the nodes, and its TTL ran out), nobody can take it for d more, so that
// the late requests of the old holder reach the protected resource before
// the next holder's first; a release (Release, Do's return) frees it at
// once, but not one that comes after the lock ended (Err: lost, or past
// its validity), which leaves the delay standing. It is for resources that can check neither a fencing token nor the
// lock: where they can, fencing (Lock.Fence) is the stronger protection.
//
// The nodes keep the lock's key d longer than its TTL, at acquisition and
// at every extension (Extend, auto-renewal, Do), while the holder's
// validity (Lock.Until) and its loss signals still count from the TTL. It
// costs no request: the key's expiry is simply longer. It holds for every
// shape (a lock, a permit of WithLimit, a writer beside WithShared readers;
// a reader with it keeps writers out for d after it ends) and on every
// topology. ExtendToken keeps the delay too: the lock's token carries it.
//
// d must be in 0..MaxLockDelay, and the TTL plus d at most
// Options.RecoveryDelay (unless the quarantine is off); otherwise the call
// fails with ErrInvalidLockDelay. Default 0: no delay.
func WithLockDelay(d time.Duration) LockOption {
	return lockOption(func(c *lockConfig) { c.delay = d })
}

// checkLockDelay rejects a lock-delay d for a lock with ttl (both as the
// caller gave them) that WithLockDelay does not accept.
func (c *Client) checkLockDelay(d, ttl time.Duration) error {
	switch {
	case d == 0:
		return nil
	case d < 0:
		return fmt.Errorf("%w: %s is negative", ErrInvalidLockDelay, d)
	case d > MaxLockDelay:
		return fmt.Errorf("%w: %s is above the %s maximum", ErrInvalidLockDelay, d, MaxLockDelay)
	}
	if ttl.Truncate(time.Millisecond) > math.MaxInt64-d.Truncate(time.Millisecond) {
		return fmt.Errorf("%w: %w: the %s TTL plus the %s delay is beyond the longest time.Duration", ErrInvalidLockDelay,
			ErrInvalidTTL, ttl, d)
	}
	hold := ttl.Truncate(time.Millisecond) + d.Truncate(time.Millisecond)
	if !c.opts.DisableQuarantine && hold > c.opts.RecoveryDelay {
		return fmt.Errorf("%w: the %s TTL plus the %s delay is above the %s recovery delay, so a node that "+
			"restarted without its data could grant the lock before the delay is over: shorten one, or raise "+
			"Options.RecoveryDelay on every client of these nodes together", ErrInvalidLockDelay, ttl, d, c.opts.RecoveryDelay)
	}
	return checkCounterTTL(hold, c.opts)
}

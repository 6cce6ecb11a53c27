package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// ExtendToken extends the lock named key that was acquired with token,
// without the *Lock of that acquisition: for a lock taken by another process,
// such as a shell script that ran `redlock acquire` and later
// `redlock extend`. It resets the lock's time-to-live to ttl on every node
// that still holds token (when ttl is 0: the TTL the lock was acquired
// with, which a token of this library carries, else Options.TTL), and
// returns the new
// validity deadline, start + ttl - drift allowance, when a quorum did so in
// time. It blocks for at most the per-node timeout.
//
// The validity the lock had before the call is unknown here, so a failure
// says nothing reassuring about it. Errors: ErrLockLost (with each node's
// outcome in a *QuorumError) when too many nodes no longer hold token: the
// lock expired or was taken over, and whoever held it must stop;
// ErrNotExtended when too few nodes answered in time: the lock may still be
// held, until a deadline this call cannot know; ErrInvalidKey, ErrInvalidTTL.
func (c *Client) ExtendToken(ctx context.Context, key, token string, ttl time.Duration) (time.Time, error) {
	if ttl == 0 {
		ttl = c.opts.TTL
		if acquired, ok := wire.TokenTTL(token); ok {
			ttl = acquired
		}
	}
	l, err := c.tokenLock(key, token, ttl)
	if err != nil {
		return time.Time{}, err
	}
	if err := l.Extend(ctx, ttl); err != nil {
		return time.Time{}, err
	}
	return l.Until(), nil
}

// ReleaseToken releases the lock named key that was acquired with token,
// without the *Lock of that acquisition. It deletes the key on every node
// where it still holds token, never another holder's, and behaves as
// Lock.Release does: it runs even when ctx has ended, and returns once a
// quorum answered; its errors are Release's: ErrNotHeld when no node that
// answered held token (the lock had expired: harmless, but its holder
// overran it); ErrNotReleased when fewer than a quorum answered in time (the
// lock may stand until its TTL passes); ErrInvalidKey.
func (c *Client) ReleaseToken(ctx context.Context, key, token string) error {
	l, err := c.tokenLock(key, token, c.opts.TTL)
	if err != nil {
		return err
	}
	return l.Release(ctx)
}

// tokenLock rebuilds a Lock from a key name and a token so that Extend and
// Release run their usual code paths. Its validity is unknown; it is given a
// deadline one TTL away only so that Extend's check of a lapsed deadline
// passes, and the Lock never leaves this file: Extend replaces the deadline
// by a measured one on success, and nothing reads it on failure.
func (c *Client) tokenLock(name, token string, ttl time.Duration) (*Lock, error) {
	key, err := c.key(name)
	if err != nil {
		return nil, err
	}
	if err := checkTTL(ttl, c.opts.DriftFactor); err != nil {
		return nil, err
	}
	ttl = ttl.Truncate(time.Millisecond)
	return newLock(c, key, token, ttl, time.Now().Add(ttl), false), nil
}

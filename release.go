package redlock

import (
	"context"
	"fmt"
)

// Release deletes the lock on every node where it still holds this lock's
// token, and never another holder's. It returns once a quorum of nodes has
// deleted it (the others follow within the per-node timeout), and runs even
// when ctx has already ended or is nil, so that a deferred Release always
// cleans up.
//
// It succeeds once a quorum of nodes has answered, each having deleted the
// key or no longer holding it, and at least one having deleted it. Errors:
// ErrNotHeld when no node that answered still held the lock (it had expired:
// harmless); ErrNotReleased when fewer than a quorum answered in time (the
// lock may stand until its TTL passes; Release may be called again);
// ErrReleased when the lock was already released.
func (l *Lock) Release(ctx context.Context) error {
	c := l.client
	l.releasing.Lock()
	defer l.releasing.Unlock()
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if ctx == nil {
		ctx = context.Background() // a release always runs
	}
	if released {
		return fmt.Errorf("%w: %s", ErrReleased, quoteKey(l.key))
	}

	results, ok := l.release(uncancelled(ctx))
	answered := 0
	for _, r := range results {
		if r.Outcome == OutcomeOK || r.Outcome == OutcomeHeld {
			answered++
		}
	}
	if answered < c.quorum {
		// The lock may still stand on a quorum until its TTL passes.
		return &QuorumError{Op: "release", Key: l.key, OK: ok, Quorum: c.quorum, Nodes: results, Err: ErrNotReleased}
	}

	l.mu.Lock()
	l.released = true
	l.endLocked(ErrReleased)
	l.mu.Unlock()
	c.waiters.released(l.key, l.freed)
	if ok == 0 {
		return &QuorumError{Op: "release", Key: l.key, OK: ok, Quorum: c.quorum, Nodes: results, Err: ErrNotHeld}
	}
	return nil
}

// release runs the release script on every node: announced, or carrying
// the attempt of a goroutine of this client that waits for the lock. It
// returns once a quorum deleted the key; otherwise it hears every node out
// (a node that is down fails fast), so that "not held" is not mistaken for
// "not answered". The next acquisition of the key by this client waits for
// the nodes not heard from yet (waiters.addTrailing).
func (l *Lock) release(ctx context.Context) ([]NodeResult, int) {
	c := l.client
	enough := func(ok, _ int) bool { return ok >= c.quorum }
	var results []NodeResult
	var ok int
	var unfinished *flight
	if h := c.waiters.takeHandoff(l.key); h != nil {
		results, ok, unfinished = l.releaseCarrying(ctx, h, enough)
	} else {
		release := releaser(l.key, l.token, true)
		results, ok, unfinished = c.trackedFanout(ctx, c.nodeTimeout(l.ttl), release, l.lagging, isOne, enough)
	}
	c.waiters.addTrailing(l.key, laggingNodes(results, unfinished, c.nodeTimeout(l.ttl)))
	return results, ok
}

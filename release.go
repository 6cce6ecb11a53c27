package redlock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redlock-go/redlock/internal/telemetry"
)

// Release deletes the lock on every node where it still holds this lock's
// token, and never another holder's. It returns once a quorum of nodes has
// deleted it (the others follow within the per-node timeout), and runs even
// when ctx has already ended or is nil, so that a deferred Release always
// cleans up. A node that did not answer in time (a slow node under load, or
// a release queued past its deadline) is sent the release again in the
// background, for a few seconds at most, until Close.
//
// It succeeds once a quorum of nodes has answered, each having deleted the
// key or no longer holding it, and at least one having deleted it. Errors:
// ErrNotHeld when no node that answered still held the lock (it had expired:
// harmless); ErrNotReleased when fewer than a quorum answered in time (the
// lock may stand until its TTL passes; Release may be called again);
// ErrReleased when the lock was already released.
func (l *Lock) Release(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background() // a release always runs
	}
	if l.client.tel != nil {
		return l.client.observeRelease(ctx, l)
	}
	return l.releaseCall(ctx, nil)
}

// releaseCall is Release, with a context; call, when not nil, observes it
// (telemetry.go).
func (l *Lock) releaseCall(ctx context.Context, call *telemetry.Call) error {
	c := l.client
	l.releasing.Lock()
	defer l.releasing.Unlock()
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return fmt.Errorf("%w: %s", ErrReleased, quoteKey(l.key))
	}

	results, ok := l.release(uncancelled(ctx))
	c.observeNodes(ctx, call, telemetry.OpRelease, results)
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
		release := announcedReleaser(l.key, l.token, c.id, c.keys)
		results, ok, unfinished = c.trackedFanout(ctx, c.nodeTimeout(l.ttl), release, l.lagging.releasing(), isOne, enough)
	}
	c.waiters.addTrailing(l.key, laggingNodes(results, unfinished, c.nodeTimeout(l.ttl)))
	l.finishMissed(results, unfinished)
	return results, ok
}

// Background finishing of releases that missed their per-node deadline.
const (
	// finishFirstDelay is the pause before a missed release is sent again:
	// a node that was slow under load usually has room again by then.
	finishFirstDelay = 10 * time.Millisecond
	// finishTries bounds the tries; the pauses between them double, so
	// eight span about two and a half seconds. A node silent for longer
	// keeps the key until its TTL passes, and costs no more requests: each
	// try to a silent node waits out a per-node timeout.
	finishTries = 8
	// maxFinishing bounds the releases finished at once: under a node that
	// stopped answering, every release misses it, and the keys left there
	// expire with their TTL anyway.
	maxFinishing = 256
)

// finishMissed sends the release again, in the background, to the nodes that
// did not answer it in time (results, and the late answers of unfinished once
// every node answered), so that the key does not stay on that node until
// its TTL passes. A release can miss its deadline under load: queued behind
// slower requests, it is dropped unsent once its deadline passed.
func (l *Lock) finishMissed(results []NodeResult, unfinished *flight) {
	c := l.client
	if unfinished == nil {
		if missedAny(results) {
			c.finish.start(c, l.key, l.token, l.ttl, results)
		}
		return
	}
	final := slices.Clone(results) // results may live in the flight's memory
	unfinished.afterLanding(func() {
		t := tally{results: final, isOK: isOne}
		unfinished.drain(&t)
		if missedAny(final) {
			c.finish.start(c, l.key, l.token, l.ttl, final)
		}
	})
}

// missedAny reports whether a node did not answer in time. A node that
// failed otherwise (refused the connection, say) is down, and is not asked
// again.
func missedAny(results []NodeResult) bool {
	return slices.ContainsFunc(results, func(r NodeResult) bool { return r.Outcome == OutcomeTimeout })
}

// finishers runs the background releases of a Client; stop ends them, for
// Close.
type finishers struct {
	mu      sync.Mutex
	stopped bool
	quit    chan struct{} // closed by stop; made on first need
	active  int           // releases being finished, at most maxFinishing
	running sync.WaitGroup
}

// start sends the release of key by token again to the nodes of results that
// timed out, after a pause and then with pauses that double, until they
// answered (deleted, or no longer holding it), finishTries tries, ttl passed
// (the key has expired), or the client closes. It does not block. With
// maxFinishing releases under way already, it does nothing.
func (f *finishers) start(c *Client, key, token string, ttl time.Duration, results []NodeResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped || f.active >= maxFinishing {
		return
	}
	f.active++
	if f.quit == nil {
		f.quit = make(chan struct{})
	}
	missed := make([]bool, len(results))
	for i, r := range results {
		missed[i] = r.Outcome == OutcomeTimeout
	}
	f.running.Add(1)
	go func(quit <-chan struct{}) {
		defer f.finished()
		end := time.Now().Add(ttl)
		delay := finishFirstDelay
		try := 0
		for ; try < finishTries && time.Now().Add(delay).Before(end); try, delay = try+1, 2*delay {
			select {
			case <-quit:
				return
			case <-time.After(delay):
			}
			if !c.releaseAgain(key, token, ttl, missed) {
				c.observeBackgroundRelease(key, try+1, nil)
				return
			}
		}
		c.observeBackgroundRelease(key, try, missed)
	}(f.quit)
}

// releaseAgain sends the release of key by token to the nodes marked
// missed, and reports whether some of them missed it again; those stay
// marked.
func (c *Client) releaseAgain(key, token string, ttl time.Duration, missed []bool) bool {
	req := releaser(key, token)
	req.local = func(node int) (any, bool) { return int64(0), !missed[node] } // done already
	results, _ := c.fanout(context.Background(), c.nodeTimeout(ttl), req, isOne, func(int, int) bool { return false })
	again := false
	for i, r := range results {
		missed[i] = missed[i] && r.Outcome == OutcomeTimeout
		again = again || missed[i]
	}
	return again
}

// finished counts out a release finished, or given up.
func (f *finishers) finished() {
	f.mu.Lock()
	f.active--
	f.mu.Unlock()
	f.running.Done()
}

// stop ends the background releases and waits for those under way, at most
// the per-node timeout. No release starts after it.
func (f *finishers) stop() {
	f.mu.Lock()
	if !f.stopped {
		f.stopped = true
		if f.quit != nil {
			close(f.quit)
		}
	}
	f.mu.Unlock()
	f.running.Wait()
}

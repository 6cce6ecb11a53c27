package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wire"
)

// Release deletes the lock on every node where it still holds this lock's
// token, and never another holder's. It returns once a quorum of nodes has
// deleted it (the others follow within the per-node timeout), and runs even
// when ctx has already ended or is nil, so that a deferred Release always
// cleans up. A node that did not answer in time (a slow node under load, or
// a release queued past its deadline) is sent the release again in the
// background, for a few seconds at most, until Close; when fewer than a
// quorum answered in time, Release waits for those tries (eight over about
// 2.5 s, each waiting up to a per-node timeout, and, on a node of several
// that stopped answering, up to half a second more for a late reply: 3 to
// 6 s in all) until a quorum answered, ctx ends, or the lock's key expires
// on the nodes anyway (its validity, Until, plus the drift allowance and
// its lock-delay). Give ctx a deadline to bound it, on a shutdown say. A
// node that failed at once (the connection refused, an error reply) is
// neither waited for nor tried again: Release returns ErrNotReleased at
// once when too few nodes are left to answer, and the key expires there
// with its TTL.
//
// It succeeds once a quorum of nodes has answered, each having deleted the
// key or no longer holding it, and at least one having deleted it. Errors:
// ErrNotHeld when no node that answered still held the lock (it had expired:
// harmless); ErrNotReleased when fewer than a quorum answered (the lock may
// stand until its TTL passes; Release may be called again); ErrReleased
// when the lock was already released. A lock with a lock-delay
// (WithLockDelay) that ended before its release (lost or expired: Err) is
// not released: the delay keeps the key from the next holder, and Release
// returns ErrNotHeld, wrapping Err. Release stops the lock's automatic
// renewal (WithAutoRenew, Do) first: a lock whose release failed ends at
// its deadline, as one that expired (ErrLockExpired), unless it is extended.
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
	delayed := false
	if !released {
		// Ended (lost or expired, as Err would say now) before a first
		// release, the lock keeps its lock-delay; a release sent while it
		// held is sent again. One taken over has no delay to keep.
		if l.delay > 0 {
			l.checkDeadlineLocked()
		}
		delayed = l.delay > 0 && l.err != nil && !l.releaseSent && !errors.Is(l.err, ErrTakenOver)
		l.released, l.releaseSent = delayed, true
		// The holder lets the lock go: should the release fail, the lock
		// runs out at its TTL rather than being renewed by nobody's will.
		l.stopRenewalLocked()
		l.keep = false
	}
	ended := l.err
	l.mu.Unlock()
	if released {
		return fmt.Errorf("%w: %s", ErrReleased, quoteKey(l.key))
	}
	if delayed {
		// It ended without a release (see WithLockDelay): the delay
		// stands, as if its holder had died.
		c.waiters.Released(l.key, l.holding)
		return fmt.Errorf("%w: %s ended before its release, which was not sent: its %s lock-delay stands where the nodes "+
			"still keep it, as for a holder that died: %w", ErrNotHeld, quoteKey(l.key), l.delay, ended)
	}

	results, ok, finishing := l.release(nodes.Uncancelled(ctx))
	c.observeNodes(ctx, call, telemetry.OpRelease, results)
	// A node that did not hold the lock may hold an old attempt's grant.
	c.clearLeftovers(ctx, l.key, results, true)
	answered := 0
	for _, r := range results {
		if answeredRelease(r) {
			answered++
		}
	}
	if answered < c.quorum && finishing != nil && ctx.Err() == nil {
		wait, cancel := context.WithDeadline(ctx, l.expiry())
		answered, ok = awaitFinish(wait, finishing, answered, ok, c.quorum)
		cancel()
	}
	if answered < c.quorum {
		// The lock may still stand on a quorum until its TTL passes.
		return l.notReleased(ok, results)
	}

	l.mu.Lock()
	l.released = true
	l.endLocked(ErrReleased)
	l.mu.Unlock()
	c.waiters.Released(l.key, l.holding)
	if ok == 0 {
		return &QuorumError{Op: "release", Key: l.key, OK: ok, Quorum: c.quorum, Nodes: results, Err: ErrNotHeld}
	}
	return nil
}

// notReleased returns the error of a release that fewer than a quorum
// answered, ok of them deleting the key, with every node's outcome; it
// wraps ErrInvalidOptions too when so many nodes refused for a reason no
// retry fixes (a key of another type, an ACL) that no quorum can.
func (l *Lock) notReleased(ok int, results []NodeResult) error {
	c := l.client
	qe := &QuorumError{Op: "release", Key: l.key, OK: ok, Quorum: c.quorum, Nodes: results, Err: ErrNotReleased, Cause: c.closedCause()}
	if qe.Cause == nil {
		qe.failFast()
	}
	return qe
}

// release runs the release script on every node: announced, or carrying
// the attempt of a goroutine of this client that waits for the lock. It
// returns once a quorum deleted the key; otherwise it hears every node out
// (a node that is down fails fast), so that "not held" is not mistaken for
// "not answered". The next acquisition of the key by this client waits for
// the nodes not heard from yet (waiters.addTrailing).
func (l *Lock) release(ctx context.Context) ([]NodeResult, int, <-chan finishReport) {
	c := l.client
	enough := func(ok, _ int) bool { return ok >= c.quorum }
	// Under mu: a renewal in flight may still move the deadline.
	valid := time.Now().Before(l.Until())
	var results []NodeResult
	var ok int
	var unfinished *nodes.Flight
	if h := c.waiters.TakeOffer(l.key); h != nil {
		results, ok, unfinished = l.releaseCarrying(ctx, h.(*handoff), enough)
	} else if h := c.permitOffers.Take(l.key); h != nil {
		l.mu.Lock()
		l.handedOff, l.handedOffAt = true, time.Now()
		l.mu.Unlock()
		results, ok, unfinished = l.releaseCarrying(ctx, h.(*permitHandoff).bind(l.key), enough)
	} else {
		timeout := c.nodeTimeout(l.ttl)
		release := announcedReleaser(l.key, l.token, l.queuedAs, l.queuedSince, c.wire.namedFor(timeout), c.keys)
		results, ok, unfinished = c.trackedFanout(ctx, timeout, release, l.lagging.Releasing(), nodes.IsOne, enough)
	}
	c.waiters.AddTrailing(l.key, unfinished.Lagging())
	return results, ok, c.finishMissed(l.key, l.token, l.ttlNow()+l.delay, results, unfinished, valid)
}

// answeredRelease reports that a node answered a release: it deleted the
// key, or the key no longer held the token there.
func answeredRelease(r NodeResult) bool {
	return r.Outcome == OutcomeOK || r.Outcome == OutcomeHeld
}

// expiry returns when the lock's key expires on the nodes by this client's
// clock: at the end of its validity plus the drift allowance the TTL of
// its grant or last extension took off, and its lock-delay.
func (l *Lock) expiry() time.Time {
	return l.Until().Add(drift(l.ttlNow(), l.client.opts.DriftFactor) + l.delay)
}

// finishReport counts the nodes that a release finished in the background
// heard from in one round: answered, of which deleted the key.
type finishReport struct{ answered, deleted int }

// awaitFinish adds the nodes that the background release reports on
// finishing to answered and ok (deleted), until a quorum answered, it is
// done, or ctx ends.
func awaitFinish(ctx context.Context, finishing <-chan finishReport, answered, ok, quorum int) (int, int) {
	for answered < quorum {
		select {
		case r, more := <-finishing:
			if !more {
				return answered, ok
			}
			answered, ok = answered+r.answered, ok+r.deleted
		case <-ctx.Done():
			return answered, ok
		}
	}
	return answered, ok
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

// finishMissed sends the release of key by token again, in the background,
// to the nodes that did not answer it in time (results, and the late answers
// of unfinished once every node answered), so that the key does not stay on
// that node until its TTL passes: the release of a lock, or of a failed
// attempt. A release can miss its deadline under load: queued behind
// slower requests, it is dropped unsent once its deadline passed. It returns
// the channel on which each round's nodes heard from are reported, closed
// once done; nil when every node answered in time.
//
// valid says that the release was sent while the lock was valid: a node
// that no longer holds the token when asked again then counts as one where
// the release deleted the key. Only that release, reaching it after all,
// can have removed a key within its TTL; left out, such a node would turn
// a release that a slow node missed in time into "not held".
func (c *Client) finishMissed(key, token string, ttl time.Duration, results []NodeResult, unfinished *nodes.Flight, valid bool) <-chan finishReport {
	if unfinished == nil {
		c.rememberLeftovers(key, token, ttl, results)
		if !missedAny(results) {
			return nil
		}
		finishing := make(chan finishReport, finishTries+1)
		c.finish.start(c, key, token, ttl, results, finishing, valid)
		return finishing
	}
	finishing := make(chan finishReport, finishTries+1)
	final := slices.Clone(results) // results may live in the flight's memory
	unfinished.AfterLanding(func() {
		before := slices.Clone(final)
		unfinished.Landed(nodes.IsOne, func(node int, r nodes.Result) { final[node] = nodeResult(r) })
		c.rememberLeftovers(key, token, ttl, final)
		// A node that did not hold it may hold an old attempt's grant.
		c.clearLeftovers(context.Background(), key, final, true)
		finishing <- newlyAnswered(before, final)
		if missedAny(final) {
			c.finish.start(c, key, token, ttl, final, finishing, valid)
		} else {
			close(finishing)
		}
	})
	return finishing
}

// newlyAnswered counts the nodes that answered a release in after and not
// in before.
func newlyAnswered(before, after []NodeResult) finishReport {
	var r finishReport
	for i := range after {
		if answeredRelease(after[i]) && !answeredRelease(before[i]) {
			r.answered++
			if after[i].Outcome == OutcomeOK {
				r.deleted++
			}
		}
	}
	return r
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
// (the key has expired), or the client closes. It does not block. It
// reports on finishing the nodes heard from in each round, and closes it
// when done; finishing must have room for finishTries reports. With
// maxFinishing releases under way already, it does nothing but close it.
// valid is as for finishMissed.
func (f *finishers) start(c *Client, key, token string, ttl time.Duration, results []NodeResult, finishing chan<- finishReport, valid bool) {
	missed := make([]bool, len(results))
	for i, r := range results {
		missed[i] = r.Outcome == OutcomeTimeout
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped || f.active >= maxFinishing {
		close(finishing)
		return
	}
	f.active++
	if f.quit == nil {
		f.quit = make(chan struct{})
	}
	f.running.Add(1)
	go func(quit <-chan struct{}) {
		defer f.finished()
		defer close(finishing)
		end := time.Now().Add(ttl)
		delay := finishFirstDelay
		try := 0
		for ; try < finishTries && time.Now().Add(delay).Before(end); try, delay = try+1, 2*delay {
			select {
			case <-quit:
				return
			case <-time.After(delay):
			}
			again, heard := c.releaseAgain(key, token, ttl, missed, valid)
			finishing <- heard
			if !again {
				c.observeBackgroundRelease(key, try+1, nil)
				return
			}
		}
		c.observeBackgroundRelease(key, try, missed)
	}(f.quit)
}

// releaseAgain sends the release of key by token to the nodes marked
// missed, reports whether some of them missed it again, which stay marked,
// and counts those that answered; with valid (see finishMissed), a node
// where the token is gone counts as deleted.
func (c *Client) releaseAgain(key, token string, ttl time.Duration, missed []bool, valid bool) (again bool, heard finishReport) {
	req := releaser(key, token)
	req.Local = func(node int) (any, bool) { return int64(0), !missed[node] } // done already
	results, _ := c.fanout(context.Background(), c.nodeTimeout(ttl), req, nodes.IsOne, func(int, int) bool { return false })
	for i, r := range results {
		if missed[i] && answeredRelease(r) {
			if r.Outcome == OutcomeOK {
				c.leftovers.answered(key, token, i)
			}
			heard.answered++
			if r.Outcome == OutcomeOK || valid {
				heard.deleted++
			}
		}
		missed[i] = missed[i] && r.Outcome == OutcomeTimeout
		again = again || missed[i]
	}
	return again, heard
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

// handoff is the acquisition attempt of a goroutine whose turn started with
// the lock held by this client, offered to go out with the release: on each
// node the release and the attempt then leave in one script call, in that
// order, so the lock changes hands within one round trip instead of two.
type handoff struct {
	state atomic.Int32 // handoffOffered, handoffTaken or handoffWithdrawn
	// sent is closed once the releasing goroutine has submitted the calls
	// that launch returned.
	sent chan struct{}

	// The attempt offered, set up by newHandoff. place is the waiting
	// call's place in the key's queue, which the attempt goes through.
	client    *Client
	ctx       context.Context
	key       string
	ttl       time.Duration
	delay     time.Duration
	owner     string
	autoRenew bool
	place     *queuePlace
	// Set by launch, before sent is closed.
	attempt *attempt
	flight  *nodes.Flight
}

const (
	handoffOffered = iota
	handoffTaken
	handoffWithdrawn
)

// Withdraw takes back an offer that no release has taken yet, and reports
// whether it did; when it did not, the attempt is under way (see sent). A
// nil offer is withdrawn.
func (h *handoff) Withdraw() bool {
	return h == nil || h.state.CompareAndSwap(handoffOffered, handoffWithdrawn)
}

// Take claims the offer for a release, and reports whether it was still
// offered.
func (h *handoff) Take() bool { return h.state.CompareAndSwap(handoffOffered, handoffTaken) }

// newHandoff returns an attempt on key to offer to this client's release
// of it, parked by wait.Turns.Take; place is the waiting call's place in
// the key's queue, which the waiting goroutine reads only once the offer
// is withdrawn or sent.
func (c *Client) newHandoff(ctx context.Context, key string, ttl, delay time.Duration, owner string, autoRenew bool, place *queuePlace) *handoff {
	return &handoff{sent: make(chan struct{}), client: c, ctx: ctx, key: key, ttl: ttl, delay: delay, owner: owner,
		autoRenew: autoRenew, place: place}
}

// launch sets up the offered attempt and the fan-out that will carry it,
// for a release that took the offer. The attempt goes through the key's
// queue as one that began waiting now: on each node it takes the key
// only if no other client queued for it before (see
// lua/queued_acquire.lua), so that this client's goroutines cannot keep
// handing the key to each other while other clients wait in line; those,
// the release names (see handingOffReleaser).
func (h *handoff) launch() {
	c := h.client
	h.place.handoff = true
	h.attempt = c.newAttempt(h.key, h.ttl, h.delay, h.owner, h.place, false)
	h.flight = c.nodes.NewFlight(h.ctx, c.nodeTimeout(h.ttl))
}

// collect completes the attempt once the release that took the offer sent
// it (see sent).
func (h *handoff) collect() (*Lock, error) {
	results, ok, unfinished := h.flight.Collect(isGranted, h.client.decided)
	lock, err := h.client.conclude(h.ctx, h.attempt, nodeResults(results), ok, unfinished, h.autoRenew)
	if tel := h.client.tel; tel != nil {
		tel.Handoff(h.ctx, err == nil)
	}
	return lock, err
}

// sentOrNil returns h.sent, or nil for no offer.
func (h *handoff) sentOrNil() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.sent
}

// releaseCarrying releases the lock with h's attempt in tow: on each node
// the attempt follows the release in the same script call. The release
// takes this client's entry out of the key's queue, as an announced one
// does, and announces only to the clients the queue names, who go first
// when they queued before h's attempt; otherwise the key is taken again
// at once.
func (l *Lock) releaseCarrying(ctx context.Context, h *handoff, enough func(ok, others int) bool) ([]NodeResult, int, *nodes.Flight) {
	c := l.client
	h.launch()
	timeout := c.nodeTimeout(l.ttl)
	release := handingOffReleaser(l.key, l.token, l.queuedAs, l.queuedSince, c.wire.namedFor(timeout), c.keys)
	f := c.nodes.Towing(ctx, timeout, release, l.lagging.Releasing(), h.flight, h.attempt.req)
	close(h.sent)
	results, ok, unfinished := f.Collect(nodes.IsOne, enough)
	return nodeResults(results), ok, unfinished
}

// giveUpQueues takes this client's entry out of the queues of keys
// (leaveQueues): its id, or a reader's entry (wire.ReaderEntry),
// after a call that waited for them gave up: it returns once a quorum of
// the nodes left each queue, so that a reader or another client's attempt
// right after the call returned is not refused for the waiter that gave
// up, but no later than NodeTimeout after the call's deadline (or after
// now, for a call cancelled without one), so that a silent node does not
// hold the call back; the leave goes on in the background. A call that
// Close ended leaves too: Close waits for it before the connections close.
func (c *Client) giveUpQueues(ctx context.Context, entry string, keys []string, since string, ttl time.Duration) {
	until := time.Now().Add(c.opts.NodeTimeout)
	if deadline, ok := ctx.Deadline(); ok && deadline.Before(time.Now()) {
		until = deadline.Add(c.opts.NodeTimeout)
	}
	left := make(chan struct{})
	go func() {
		defer close(left)
		c.leaveQueues(ctx, entry, keys, since, ttl)
	}()
	wait := time.NewTimer(time.Until(until))
	defer wait.Stop()
	select {
	case <-left:
	case <-wait.C:
	}
}

// leaveQueues takes this client's entry (its id, or its readers' entry)
// out of the queues of keys on every node, where the entry is still the
// one of the call that began waiting at since: after a call that gave up, or that took another of the keys it
// waited for, so that the nodes do not keep those keys free for it. The
// release of a token nobody holds leaves the queue, and, where the key is
// free, names the next clients in line (see lua/release.lua). It returns
// once a quorum of the nodes answered for each key; the requests to the
// others go on.
func (c *Client) leaveQueues(ctx context.Context, entry string, keys []string, since string, ttl time.Duration) {
	ctx = nodes.Uncancelled(ctx)
	timeout := c.nodeTimeout(ttl)
	answered := func(any) bool { return true }
	enough := func(ok, others int) bool { return ok >= c.quorum || ok+others >= len(c.conns) }
	forEach(len(keys), func(i int) {
		token, _, _, _, _, _ := wire.AttemptStrings(keys[i], time.Now(), ttl, 0, c.opts.Owner, "", false)
		req := announcedReleaser(keys[i], token, entry, since, c.wire.namedFor(timeout), c.keys)
		// Behind the last attempt's clean-up still under way on a node,
		// and so behind the attempt: an attempt that landed after the
		// leave would queue the call again.
		trailing := c.waiters.Trailing(keys[i]).Within(timeout)
		c.trackedFanout(ctx, timeout, req, trailing, answered, enough)
	})
}

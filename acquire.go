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

// newHandoff returns an attempt on key to offer to this client's release
// of it (see turns.take).
func (c *Client) newHandoff(ctx context.Context, key string, ttl time.Duration, autoRenew bool) *handoff {
	return &handoff{sent: make(chan struct{}), client: c, ctx: ctx, key: key, ttl: ttl, autoRenew: autoRenew}
}

// launch starts the offered attempt's fan-out, for a release that took the
// offer, and returns its calls, one per node (nil for a node answered
// without asking).
func (h *handoff) launch() []*call {
	c := h.client
	h.attempt = c.newAttempt(h.key, h.ttl)
	h.flight = c.newFlight(h.ctx, c.nodeTimeout(h.ttl))
	return h.flight.calls(h.attempt.req)
}

// collect completes the attempt once the release that took the offer sent
// it (see sent).
func (h *handoff) collect() (*Lock, error) {
	results, ok, unfinished := h.flight.collect(isGranted, h.client.decided)
	return h.client.conclude(h.ctx, h.attempt, results, ok, unfinished, h.autoRenew)
}

// sentOrNil returns h.sent, or nil for no offer.
func (h *handoff) sentOrNil() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.sent
}

// notAsked is the error of an Acquire whose context ended before it asked
// the nodes: it was queued behind another goroutine of this client.
func (c *Client) notAsked(key string, ctx context.Context) error {
	return &QuorumError{Op: "acquire", Key: key, Quorum: c.quorum, Nodes: c.unasked(), Err: ErrNotAcquired, Cause: ctx.Err()}
}

// attempt is one acquisition attempt: its token, its request and the
// nodes' replies.
type attempt struct {
	key     string
	token   string
	ttl     time.Duration
	start   time.Time // carries the monotonic clock reading
	req     *request
	replies []acquireReply

	acquire  acquireRequest
	replyBuf [inlineNodes]acquireReply // replies' backing array while it fits
}

// newAttempt prepares an attempt on key, its clock started.
func (c *Client) newAttempt(key string, ttl time.Duration) *attempt {
	a := &attempt{key: key, ttl: ttl}
	if n := len(c.conns); n <= inlineNodes {
		a.replies = a.replyBuf[:n]
	} else {
		a.replies = make([]acquireReply, n)
	}
	token, fenceKey, clock := attemptStrings(key, time.Now())
	a.token = token
	a.req = c.acquirer(&a.acquire, key, fenceKey, token, clock, ttl, a.replies)
	a.start = time.Now()
	return a
}

// attempt runs steps 1–5 of the Redlock algorithm once. Each node runs the
// acquire script, which also applies the restart quarantine and bumps the
// key's fencing counter; when the granting nodes' counters disagree, a second
// step raises the ones behind before the lock is handed out.
func (c *Client) attempt(ctx context.Context, key string, ttl time.Duration, autoRenew bool) (*Lock, error) {
	a := c.newAttempt(key, ttl)
	// Decided as soon as a quorum granted, or so many refused that none can;
	// requests still under way then are waited for before anything else is
	// sent to their nodes (see lagging), so that a release cannot overtake
	// them. Likewise, this attempt waits on the nodes that this client's
	// last release of the key has not heard back from (see
	// trailingReleases).
	results, ok, unfinished := c.trackedFanout(ctx, c.nodeTimeout(ttl), a.req, c.trailing.of(key).within(c.nodeTimeout(ttl)), isGranted, c.decided)
	return c.conclude(ctx, a, results, ok, unfinished, autoRenew)
}

// conclude turns the nodes' answers to an attempt into a Lock, or cleans up
// after a failed one.
func (c *Client) conclude(ctx context.Context, a *attempt, results []NodeResult, ok int, unfinished *flight, autoRenew bool) (*Lock, error) {
	key, token, ttl := a.key, a.token, a.ttl
	lag := laggingNodes(results, unfinished, c.nodeTimeout(ttl))
	noteRecovering(results, a.replies)
	until := a.start.Add(ttl - drift(ttl, c.opts.DriftFactor))
	validity := time.Until(until)
	if ok >= c.quorum && validity > 0 {
		fence, behind := fenceOf(results, a.replies)
		if behind > 0 {
			results, ok = c.raiseFences(ctx, key, token, fence, ttl, results, a.replies)
			validity = time.Until(until)
		}
		if ok >= c.quorum && validity > 0 {
			lock := newLock(c, key, token, ttl, until, autoRenew)
			lock.fence = fence
			if len(results) <= inlineNodes {
				// results may live in the fan-out's own memory.
				lock.nodes = append(lock.nodesBuf[:0], results...)
			} else {
				lock.nodes = results
			}
			lock.lagging = lag
			return lock, nil
		}
	}
	c.releaseEverywhere(ctx, key, token, ttl, lag)
	qe := &QuorumError{Op: "acquire", Key: key, OK: ok, Quorum: c.quorum, Validity: validity, Nodes: results, Err: ErrNotAcquired}
	if ctx.Err() != nil {
		qe.Cause = ctx.Err()
	}
	return nil, qe
}

// granted reports that a quorum granted an acquisition.
func (c *Client) granted(ok, _ int) bool { return ok >= c.quorum }

// decided reports that the answers so far settle an acquisition or an
// extension: a quorum said yes, or so many said no that it cannot be reached.
func (c *Client) decided(ok, others int) bool {
	return ok >= c.quorum || others > len(c.conns)-c.quorum
}

// releaseEverywhere deletes key on every node where it still holds token,
// including nodes that did not answer the acquisition. It waits, up to the
// node timeout, for the nodes that answered; on the others the release
// follows their acquire request in the background, so that a slow node
// does not hold up a failed attempt twice. It runs even when ctx has ended.
//
// It does not announce the release: a failed attempt freed at most a
// minority of nodes, and waking waiters for that only splits their votes.
func (c *Client) releaseEverywhere(ctx context.Context, key, token string, ttl time.Duration, lag *lagging) {
	ctx = uncancelled(ctx)
	wait := len(c.conns)
	if lag != nil {
		wait -= len(lag.nodes)
	}
	results, _, unfinished := c.trackedFanout(ctx, c.nodeTimeout(ttl), releaser(key, token, false), lag, isOne,
		func(ok, others int) bool { return ok+others >= wait })
	c.trailing.add(key, laggingNodes(results, unfinished, c.nodeTimeout(ttl)))
}

// releaser returns the release script's request; announced releases are
// published on releaseChannel(key), silent ones are not.
func releaser(key, token string, announced bool) *request {
	var prefix string
	if announced {
		prefix = releaseChannelPrefix
	}
	r := &releaseRequest{keys: [1]string{key}, args: [2]string{token, prefix}}
	r.request = request{script: releaseScript, keys: r.keys[:], args: r.args[:]}
	return &r.request
}

// releaseRequest is a release's request with its keys and arguments in one
// allocation.
type releaseRequest struct {
	request
	keys [1]string
	args [2]string
}

// uncancelled returns ctx without its cancellation and deadline, and ctx
// itself when it has neither.
func uncancelled(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// withCause adds ctx's error to a QuorumError so that errors.Is sees both.
func withCause(err error, ctx context.Context) error {
	if qe, ok := err.(*QuorumError); ok && qe.Cause == nil {
		qe.Cause = ctx.Err()
	}
	return err
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

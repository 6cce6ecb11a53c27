package redlock

import (
	"context"
	"sync/atomic"
	"time"
)

// handoff is the acquisition attempt of a goroutine whose turn started with
// the lock held by this client, offered to go out with the release: on each
// node the release and the attempt then leave in one script call, in that
// order, so the lock changes hands within one round trip instead of two.
type handoff struct {
	state atomic.Int32 // handoffOffered, handoffTaken or handoffWithdrawn
	// sent is closed once the releasing goroutine has submitted the calls
	// that launch returned.
	sent chan struct{}

	// The attempt offered, set up by newHandoff.
	client    *Client
	ctx       context.Context
	key       string
	ttl       time.Duration
	autoRenew bool
	// Set by launch, before sent is closed.
	attempt *attempt
	flight  *flight
}

const (
	handoffOffered = iota
	handoffTaken
	handoffWithdrawn
)

// withdraw takes back an offer that no release has taken yet, and reports
// whether it did; when it did not, the attempt is under way (see sent). A
// nil offer is withdrawn.
func (h *handoff) withdraw() bool {
	return h == nil || h.state.CompareAndSwap(handoffOffered, handoffWithdrawn)
}

// newHandoff returns an attempt on key to offer to this client's release
// of it, parked by waiters.take.
func (c *Client) newHandoff(ctx context.Context, key string, ttl time.Duration, autoRenew bool) *handoff {
	return &handoff{sent: make(chan struct{}), client: c, ctx: ctx, key: key, ttl: ttl, autoRenew: autoRenew}
}

// launch starts the offered attempt's fan-out, for a release that took the
// offer, and returns its calls, one per node (nil for a node answered
// without asking). queuedSince is the releasing lock's: the release is not
// announced and leaves this client's entry in the key's queue, which the
// lock won here then owns (see Lock.queuedSince).
func (h *handoff) launch(queuedSince string) []*call {
	c := h.client
	h.attempt = c.newAttempt(h.key, h.ttl, nil, false)
	h.attempt.queuedSince = queuedSince
	h.flight = c.newFlight(h.ctx, c.nodeTimeout(h.ttl))
	return h.flight.calls(h.attempt.req)
}

// collect completes the attempt once the release that took the offer sent
// it (see sent).
func (h *handoff) collect() (*Lock, error) {
	results, ok, unfinished := h.flight.collect(isGranted, h.client.decided)
	lock, err := h.client.conclude(h.ctx, h.attempt, results, ok, unfinished, h.autoRenew)
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
// the attempt follows the release in the same script call. The release is
// not announced: the key is taken again at once.
func (l *Lock) releaseCarrying(ctx context.Context, h *handoff, enough func(ok, others int) bool) ([]NodeResult, int, *flight) {
	c := l.client
	f := c.newFlight(ctx, c.nodeTimeout(l.ttl))
	releases := f.calls(releaser(l.key, l.token))
	attempts := h.launch(l.queuedSince)
	lag := l.lagging.releasing()
	for i, rel := range releases {
		group := append(make([]*call, 0, 2), rel)
		if attempts[i] != nil {
			group = append(group, attempts[i])
		}
		if lag.holds(i) {
			lag.submitAfter(c.pipes[i], group...)
		} else {
			c.pipes[i].submit(group...)
		}
	}
	close(h.sent)
	return f.collect(isOne, enough)
}

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

// takeHandoff returns the attempt of a goroutine of this client waiting for
// the lock, offered to go out with its release; nil when none is.
func (l *Lock) takeHandoff() *handoff { return l.client.waiters.takeHandoff(l.key) }

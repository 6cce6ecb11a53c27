package redlock

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
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
// of it, parked by wait.Turns.Take.
func (c *Client) newHandoff(ctx context.Context, key string, ttl time.Duration, autoRenew bool) *handoff {
	return &handoff{sent: make(chan struct{}), client: c, ctx: ctx, key: key, ttl: ttl, autoRenew: autoRenew}
}

// launch sets up the offered attempt and the fan-out that will carry it,
// for a release that took the offer. queuedSince is the releasing lock's:
// the release is not announced and leaves this client's entry in the
// key's queue, which the lock won here then owns (see Lock.queuedSince).
func (h *handoff) launch(queuedSince string) {
	c := h.client
	h.attempt = c.newAttempt(h.key, h.ttl, nil, false)
	h.attempt.queuedSince = queuedSince
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
// the attempt follows the release in the same script call. The release is
// not announced: the key is taken again at once.
func (l *Lock) releaseCarrying(ctx context.Context, h *handoff, enough func(ok, others int) bool) ([]NodeResult, int, *nodes.Flight) {
	c := l.client
	h.launch(l.queuedSince)
	f := c.nodes.Towing(ctx, c.nodeTimeout(l.ttl), releaser(l.key, l.token), l.lagging.Releasing(), h.flight, h.attempt.req)
	close(h.sent)
	results, ok, unfinished := f.Collect(nodes.IsOne, enough)
	return nodeResults(results), ok, unfinished
}

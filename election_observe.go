package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wait"
	"github.com/redlock-go/redlock/internal/wire"
)

// Observation timing.
const (
	// observePollDivisor, minObservePoll and maxObservePoll pace an
	// observer's reads of the nodes between the events it is woken by (a
	// release announced, the leader's key expiring): a new leader is not
	// announced, so an observer sees it at the next read. A twentieth of
	// the TTL keeps that lag small against the failover the TTL allows;
	// 50 ms bounds the reads of a short TTL (each reads every node), and
	// 500 ms the lag of a long one.
	observePollDivisor = 20
	minObservePoll     = 50 * time.Millisecond
	maxObservePoll     = 500 * time.Millisecond
	// observeReadNodeTimeouts bounds each read of an observer to this many
	// per-node timeouts, or the poll if longer: a node that does not
	// answer by then (paused, cut off) is left out of that read, which the
	// others decide when they are a quorum, instead of holding every
	// observation back for the 3 s an operator's Inspect waits.
	observeReadNodeTimeouts = 4
)

// Observe returns a channel on which the election's leader is sent each
// time it changes, the current one first, until ctx ends or the Client
// closes (then the channel is closed). A vacancy is sent as a Leader whose Vacant is true. The
// leaders come in the order of their terms, each once: an observer may
// miss a leader that came and went between two of its reads, never see
// one after a later one. As Leader, it reports what a quorum of nodes
// hold, which may be a campaign whose attempt reached a quorum and then
// failed (its validity spent), until its clean-up: act on the leader's
// term (fencing), not on having observed it. It wakes on each release of
// the election's lock announced to all (a leader that resigns while no
// candidate waits: with candidates waiting, the release wakes only the
// next of them, and the observer sees the new leader at its next read),
// when the leader's key expires on the nodes (a leader that died), and
// reads the nodes every twentieth of the TTL (50 ms to 500 ms) meanwhile:
// the leader's, as its token says, or the observer's own (WithTTL) while
// nobody leads,
// each read ending as soon as the nodes that answered settle it, as
// Leader's, and waiting for the others at most four per-node timeouts or
// the poll. Reads that too few nodes
// answer are retried; nothing is sent for them. A receiver that does not keep up
// holds the observer back: it reads again once its last change was taken.
// A nil ctx is taken as context.Background(): the observer then ends with
// the Client.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	if ctx == nil {
		ctx = context.Background() // it ends with the Client
	}
	out := make(chan Leader)
	go e.observe(ctx, out)
	return out
}

// observe is Observe's goroutine.
func (e *Election) observe(ctx context.Context, out chan<- Leader) {
	defer close(out)
	wake, stop := e.client.waker.ListenForAll([]string{e.key}, true)
	defer stop()
	var seen observed
	var marked time.Time
	closed := e.client.closed
	poll := observePoll(e.ttl)
	for ctx.Err() == nil && !isClosed(closed) {
		marked = e.markListening(ctx, marked)
		next := time.Now().Add(poll)
		rctx, cancel := context.WithTimeout(ctx, max(poll, observeReadNodeTimeouts*e.client.requestTimeout()))
		r, err := e.read(rctx)
		cancel()
		if err == nil {
			poll = r.leader.poll(e.ttl)
		}
		if err == nil && seen.changed(r.leader) {
			select {
			case out <- r.leader:
			case <-ctx.Done():
				return
			case <-closed:
				return
			}
		}
		if err == nil && !r.expires.IsZero() && r.expires.Before(next) {
			next = r.expires.Add(time.Millisecond)
		}
		waitObserved(ctx, closed, wake, time.Until(next))
	}
}

// observePoll returns the pace of an observer's reads for leads of the
// given TTL (see observePollDivisor).
func observePoll(ttl time.Duration) time.Duration {
	return min(max(ttl/observePollDivisor, minObservePoll), maxObservePoll)
}

// poll returns the pace of an observer's reads while l leads: after the
// TTL l's token says its lead has, which the candidates chose, or ttl,
// the observer's own, when vacant or not said.
func (l Leader) poll(ttl time.Duration) time.Duration {
	if info, ok := wire.ParseToken(l.Token); ok && info.TTL > 0 {
		ttl = info.TTL
	}
	return observePoll(ttl)
}

// markListening sets the election key's waiting mark on the nodes, so that
// the releases of its lock are announced to this observer, which listens
// without trying for the lock (see lua/listen.lua): when the mark set at
// marked is past half its life, it is set again, and the new time is
// returned. The nodes' answers are waited for at most one node timeout.
func (e *Election) markListening(ctx context.Context, marked time.Time) time.Time {
	if time.Since(marked) < wire.QueueLasts/2 {
		return marked
	}
	c := e.client
	now := time.Now()
	req := &nodes.Request{Script: wire.ListenScript, Keys: []string{c.keys.WaitingKey(e.key)}, Args: []string{c.wire.queueLastsMillis}}
	c.fanout(ctx, c.requestTimeout(), req, nodes.IsOne, func(ok, others int) bool { return ok+others >= len(c.conns) })
	return now
}

// observed is what an observer reported last.
type observed struct {
	any    bool   // something was reported
	vacant bool   // the last report was a vacancy
	term   uint64 // the largest term reported
	token  string // the last leader's token
}

// changed reports whether now is to be reported after what o saw, and
// records it if so: another leader than the last, never one of an older
// term (a read that reached nodes that had not yet heard of a resignation
// must not bring back a leader reported gone), or a vacancy after a
// leader. A lock of another library has no term: it is reported when its
// token is not the last leader's.
func (o *observed) changed(now Leader) bool {
	switch {
	case o.any && now.Vacant() && o.vacant:
		return false
	case o.any && !now.Vacant() && now.Term == 0 && now.Token == o.token:
		return false
	case o.any && !now.Vacant() && now.Term != 0 && now.Term <= o.term:
		return false
	}
	o.any, o.vacant, o.term, o.token = true, now.Vacant(), max(o.term, now.Term), now.Token
	return true
}

// waitObserved waits d, or until a release is announced, ctx ends or the
// Client closes.
func waitObserved(ctx context.Context, closed <-chan struct{}, wake *wait.Wakeup, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wake.Now():
	case <-ctx.Done():
	case <-closed:
	}
}

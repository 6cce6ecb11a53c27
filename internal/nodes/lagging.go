package nodes

import (
	"errors"
	"slices"
	"time"
)

// Lagging lists the nodes whose request of a fan-out was still under way
// when the fan-out returned (unanswered, or past the node timeout but
// possibly still on its way), and that fan-out.
type Lagging struct {
	nodes   []int
	buf     [InlineNodes]int // nodes' backing array while it fits
	earlier *Flight
	timeout time.Duration // for a request sent after the wait
	// release: the requests sent after the wait release the lock that the
	// earlier fan-out acquired (see submitAfter).
	release bool
	// older are the key's earlier lagging fan-outs, newest first, that
	// the requests held behind this one wait for too (see After).
	older *Lagging
}

// LaggingNodes returns the nodes of results whose request may not have
// ended, or nil when the fan-out finished.
func LaggingNodes(results []Result, unfinished *Flight, timeout time.Duration) *Lagging {
	if unfinished == nil {
		return nil
	}
	lag := &Lagging{earlier: unfinished, timeout: timeout}
	lag.nodes = lag.buf[:0]
	for i, r := range results {
		if r.Outcome == NoAnswer || r.Outcome == Timeout {
			lag.nodes = append(lag.nodes, i)
		}
	}
	return lag
}

// Within returns lag with timeout for the request sent after the wait; nil
// stays nil.
func (lag *Lagging) Within(timeout time.Duration) *Lagging {
	if lag == nil || lag.timeout == timeout {
		return lag
	}
	return &Lagging{nodes: lag.nodes, earlier: lag.earlier, timeout: timeout, older: lag.older}
}

// After makes lag, a key's newest lagging fan-out, the head of the key's
// earlier ones still under way, prev, and returns it: the key's next
// requests wait behind all of them. A newer fan-out does not always cover
// an older one's nodes: a release is answered for a node without asking
// it when its attempt's request there was cancelled unsent (see
// submitAfter), while the release before it may still be under way there,
// behind an attempt that a later one must not overtake. After takes lag,
// which Flight.Lagging made for the caller alone. At most maxLagChain
// fan-outs are kept, the newest.
func (lag *Lagging) After(prev *Lagging) *Lagging {
	if lag == nil {
		return prev.Pending()
	}
	lag.older = prev.Pending()
	return lag.Pending()
}

// Pending returns lag's chain of fan-outs (see After) without those every
// node has answered, newest first, at most maxLagChain of them: lag itself
// when that drops none, nil when none is left.
func (lag *Lagging) Pending() *Lagging {
	var keep [maxLagChain]*Lagging
	n, dropped := 0, false
	for l := lag; l != nil; l = l.older {
		if l.earlier.done.Load() || n == len(keep) {
			dropped = true
			continue
		}
		keep[n] = l
		n++
	}
	if !dropped {
		return lag
	}
	var head *Lagging
	for i := n - 1; i >= 0; i-- {
		c := *keep[i] // the fan-outs under way may hold the old one
		c.older = head
		head = &c
	}
	return head
}

// Releasing returns lag for the release of the lock its fan-out acquired;
// nil stays nil.
func (lag *Lagging) Releasing() *Lagging {
	if lag == nil {
		return nil
	}
	r := *lag
	r.release = true
	return &r
}

// Holds reports whether a request to node must wait for the key's earlier
// requests there, which lag and have not ended yet; a nil lagging holds
// none.
func (lag *Lagging) Holds(node int) bool { return lag.holder(node) != nil }

// holder returns the newest fan-out of lag's chain whose request to node
// lags and has not ended yet, or nil.
func (lag *Lagging) holder(node int) *Lagging {
	for l := lag; l != nil; l = l.older {
		if slices.Contains(l.nodes, node) && !l.earlier.done.Load() {
			return l
		}
	}
	return nil
}

// submitAfter submits calls to their lagging node once the key's earlier
// requests there have all ended (those of lag's chain, see After): over a
// connection pool a release or an extension could otherwise reach such a
// node first; the late acquisition
// would then hold the key there until it expires, or miss the extension.
// The first call then gets a node timeout of its own, since the fan-out it
// belongs to has usually been decided by then; the others keep theirs.
//
// A key's calls wait so behind at most maxLagChain earlier ones on a node:
// a node that stopped answering would otherwise hold a chain of the key's
// requests, each waiting for the one before it, that grows with every
// request. A release cancels its acquisition's call that has not left yet,
// and is answered for the node without asking it (the key is not there),
// unless it leaves the key's queue (Request.LeavesQueue): an earlier
// attempt of the same call may have queued it there, and it is sent, once
// the earlier requests ended, to take that place out; past the bound, any
// other call fails unsent (errStillLagging), a vote not given.
func (lag *Lagging) submitAfter(p *pipe, calls ...*call) {
	h := lag.holder(calls[0].node)
	if h == nil {
		p.submit(calls...) // it ended since
		return
	}
	depth := int32(1)
	if prior := h.earlier.callTo(calls[0].node); prior != nil && prior.state.Load() == callDeferred {
		switch {
		case lag.release && h == lag && prior.state.CompareAndSwap(callDeferred, callCancelled):
			if !calls[0].req.LeavesQueue {
				p.deliver(calls[0], int64(0), nil) // "not held"
				p.refuseWith(calls[1:], errStillLagging)
				return
			}
		case prior.depth >= maxLagChain:
			p.refuseWith(calls, errStillLagging)
			return
		}
		depth = prior.depth + 1
	}
	for _, cl := range calls {
		cl.depth = depth
		cl.state.Store(callDeferred)
	}
	h.earlier.AfterLanding(func() { lag.submitDeferred(p, calls) })
}

// maxLagChain bounds how many of a key's calls to a node wait, one behind
// the other, for the earlier ones to end (see lagging.submitAfter).
const maxLagChain = 4

// submitDeferred submits the calls that submitAfter deferred, except those
// cancelled meanwhile, which fail unsent, and a lone call that its
// request's LocalAfterLag answers.
func (lag *Lagging) submitDeferred(p *pipe, calls []*call) {
	if h := lag.holder(calls[0].node); h != nil && slices.ContainsFunc(calls, deferred) {
		// An older fan-out of the chain is still under way there.
		h.earlier.AfterLanding(func() { lag.submitDeferred(p, calls) })
		return
	}
	live := calls[:0:0]
	for _, cl := range calls {
		switch {
		case !cl.state.CompareAndSwap(callDeferred, callSubmitted):
			p.deliver(cl, nil, errStillLagging)
		case len(calls) == 1 && cl.req.LocalAfterLag != nil:
			if v, ok := cl.req.LocalAfterLag(cl.node); ok {
				p.deliver(cl, v, nil)
				continue
			}
			live = append(live, cl)
		default:
			live = append(live, cl)
		}
	}
	if len(live) == 0 {
		return
	}
	first := live[0]
	first.ctx = Uncancelled(first.ctx)
	first.deadline = time.Now().Add(lag.timeout)
	p.submit(live...)
}

// deferred reports that cl still waits to be submitted (see submitAfter).
func deferred(cl *call) bool { return cl.state.Load() == callDeferred }

// errStillLagging is the error of a call not sent because the key's earlier
// requests to its node have not been sent yet (see lagging.submitAfter).
var errStillLagging = errors.New("not sent: the node has yet to answer the key's earlier requests")

// Nodes returns how many nodes lag holds a request back on; 0 for nil.
func (lag *Lagging) Nodes() int {
	if lag == nil {
		return 0
	}
	return len(lag.nodes)
}

// AfterLanding runs fn once every node answered the fan-out whose lagging
// requests lag holds others behind: at once if they have.
func (lag *Lagging) AfterLanding(fn func()) { lag.earlier.AfterLanding(fn) }

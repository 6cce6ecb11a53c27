package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// nodes are the Redis masters of a Client, each with the queue of requests
// to it (batch.go), and the fan-out of one request to all of them at once.
// It must not be copied.
type nodes struct {
	conns     []Conn
	quorum    int           // N/2+1
	pipes     []*pipe       // one per conn
	closed    chan struct{} // closed by close: the pipes' idle senders end
	closeOnce sync.Once
	// inflight counts requests to single nodes not yet answered, some
	// possibly after their fan-out returned; drain waits for them.
	inflight sync.WaitGroup
}

// init sets up n over conns; replicas is Options.WaitReplicas.
func (n *nodes) init(conns []Conn, replicas int) {
	n.conns = append([]Conn(nil), conns...)
	n.quorum = len(conns)/2 + 1
	n.closed = make(chan struct{})
	n.pipes = make([]*pipe, len(conns))
	for i, conn := range n.conns {
		n.pipes[i] = &pipe{conn: conn, node: i, cluster: isRedisCluster(conn), replicas: replicas,
			inline: honoursContext(conn), work: make(chan []*call), stop: n.closed}
	}
}

// drain waits for the requests still in flight, at most bound, and ends
// the pipes: their idle senders end, and calls still queued or made later
// fail unsent. A silent node's requests still under way end when their
// connections close, or at the connection's own read timeout.
func (n *nodes) drain(bound time.Duration) {
	landed := make(chan struct{})
	go func() {
		n.inflight.Wait()
		close(landed)
	}()
	t := time.NewTimer(bound)
	select {
	case <-landed:
	case <-t.C:
	}
	t.Stop()
	n.closeOnce.Do(func() { close(n.closed) })
	for _, p := range n.pipes {
		p.batchDeadlines.stop()
	}
}

// close closes every node connection at once, and waits for them at most
// bound: a client library may take seconds to give up a connection to a
// node that stopped answering (rueidis waits for its pending replies), and
// finishes closing it in the background then.
func (n *nodes) close(bound time.Duration) error {
	errs := make(chan error, len(n.conns))
	for _, conn := range n.conns {
		go func() {
			var err error
			if cerr := conn.Close(); cerr != nil {
				err = fmt.Errorf("%s: %w", conn.Name(), cerr)
			}
			errs <- err
		}()
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	var all []error
	for range n.conns {
		select {
		case err := <-errs:
			all = append(all, err)
		case <-t.C:
			return errors.Join(all...)
		}
	}
	return errors.Join(all...)
}

// fanout sends req to every node at once and collects the answers until
// enough(ok, others) is true, every node answered, or timeout passed. Nodes
// that answer later are not waited for: their requests end by themselves
// within the timeout. A reply classifies as OutcomeOK when isOK says so.
func (n *nodes) fanout(ctx context.Context, timeout time.Duration, req *request, isOK func(any) bool, enough func(ok, others int) bool) (results []NodeResult, ok int) {
	results, ok, _ = n.trackedFanout(ctx, timeout, req, nil, isOK, enough)
	return results, ok
}

// trackedFanout is fanout that also returns, when some nodes were not heard
// out, the fan-out whose requests to them are still to end; nil when every
// node answered. On the nodes of lag, req waits for their earlier request
// to end (see lagging).
func (n *nodes) trackedFanout(ctx context.Context, timeout time.Duration, req *request, lag *lagging, isOK func(any) bool, enough func(ok, others int) bool) (results []NodeResult, ok int, unfinished *flight) {
	if len(n.conns) == 1 && !lag.holds(0) && n.pipes[0].tryInline() {
		// One node with room: ask it from this goroutine.
		start := time.Now()
		nodeCtx, cancel := context.WithTimeout(ctx, timeout)
		val, err := n.ask(nodeCtx, req, 0)
		n.pipes[0].done()
		cancel()
		req.alone[0] = classify(n.conns[0].Name(), val, err, time.Since(start), isOK)
		results = req.alone[:]
		if results[0].Outcome == OutcomeOK {
			ok = 1
		}
		return results, ok, nil
	}
	f := n.newFlight(ctx, timeout)
	f.submit(f.calls(req), lag)
	return f.collect(isOK, enough)
}

// flight is one fan-out under way: a request to every node, sharing one
// start and one per-node deadline, and the answers coming back.
type flight struct {
	nodes    *nodes
	parent   context.Context // the caller's
	timeout  time.Duration
	start    time.Time
	deadline time.Time // per node: the earlier of start+timeout and parent's
	answers  chan answer
	pending  atomic.Int32 // nodes still to answer
	// sent holds the call to each node, nil for a node answered without
	// asking it; set by calls.
	sent []*call
	done atomic.Bool // every node answered

	mu     sync.Mutex
	landed bool     // every node answered; under mu, for onLand
	onLand []func() // run once every node answered
	// nodeCtx bounds the requests sent by themselves, made on the first:
	// requests that go in batches need none. Ended once every node
	// answered.
	nodeCtx context.Context
	cancel  context.CancelFunc

	// The calls of a fan-out to at most inlineNodes nodes live here, in
	// the flight's own allocation.
	callBuf [inlineNodes]call
	ptrBuf  [inlineNodes]*call
	bufUsed bool
	// The results that collect returns live here too, when they fit.
	resultBuf [inlineNodes]NodeResult
}

// inlineNodes is the most nodes whose calls a flight holds without
// allocating them apart.
const inlineNodes = 5

// newFlight starts the clock of a fan-out; each of its calls must be
// answered, or submitted to be.
func (n *nodes) newFlight(ctx context.Context, timeout time.Duration) *flight {
	f := &flight{nodes: n, parent: ctx, timeout: timeout, start: time.Now(), answers: make(chan answer, len(n.conns))}
	f.deadline = f.start.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(f.deadline) {
		f.deadline = d
	}
	f.pending.Store(int32(len(n.conns)))
	n.inflight.Add(len(n.conns))
	return f
}

// deliver records one node's answer. The last one ends the flight: the
// caller may have returned before.
func (f *flight) deliver(a answer) {
	f.answers <- a
	f.nodes.inflight.Done()
	if f.pending.Add(-1) == 0 {
		f.done.Store(true)
		f.mu.Lock()
		f.landed = true
		then, cancel := f.onLand, f.cancel
		f.onLand = nil
		f.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		for _, fn := range then {
			fn()
		}
	}
}

// nodeContext returns the context to send cl with by itself, bounded by
// cl's deadline, and the function to call once it was sent. Calls that
// kept the flight's context and deadline share one context, made on first
// need.
func (f *flight) nodeContext(cl *call) (context.Context, context.CancelFunc) {
	if cl.ctx != f.parent || !cl.deadline.Equal(f.deadline) {
		return withDeadline(cl.ctx, cl.deadline)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodeCtx == nil {
		// cl is not answered yet, so the flight has not landed: its last
		// answer will end the context.
		f.nodeCtx, f.cancel = context.WithDeadline(f.parent, f.deadline)
	}
	return f.nodeCtx, func() {}
}

// withDeadline returns ctx bounded by deadline, and ctx itself when it ends
// no later.
func withDeadline(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && !d.After(deadline) {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}

// uncancelled returns ctx without its cancellation and deadline, and ctx
// itself when it has neither.
func uncancelled(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// afterLanding runs fn once every node answered: at once if they have.
func (f *flight) afterLanding(fn func()) {
	f.mu.Lock()
	if !f.landed {
		f.onLand = append(f.onLand, fn)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	fn()
}

// calls returns req's call to each node, nil for the nodes req answers
// itself (see request.local), whose answers are delivered at once.
func (f *flight) calls(req *request) []*call {
	var calls []*call
	var slab []call
	if n := len(f.nodes.conns); n <= inlineNodes && !f.bufUsed {
		f.bufUsed = true
		calls, slab = f.ptrBuf[:n], f.callBuf[:n]
	} else {
		calls, slab = make([]*call, n), make([]call, n)
	}
	for i := range calls {
		if req.local != nil {
			if v, ok := req.local(i); ok {
				f.deliver(answer{node: i, val: v})
				continue
			}
		}
		slab[i] = call{req: req, node: i, ctx: f.parent, deadline: f.deadline, start: f.start, to: f}
		calls[i] = &slab[i]
	}
	f.sent = calls
	return calls
}

// callTo returns the flight's call to node, or nil.
func (f *flight) callTo(node int) *call {
	if f.sent == nil {
		return nil
	}
	return f.sent[node]
}

// submit hands each call to its node's pipe; on the nodes of lag, once
// their earlier request has ended.
func (f *flight) submit(calls []*call, lag *lagging) {
	for i, cl := range calls {
		switch {
		case cl == nil:
		case lag.holds(i):
			lag.submitAfter(f.nodes.pipes[i], cl)
		default:
			f.nodes.pipes[i].submit(cl.asBatch()...)
		}
	}
}

// collect gathers the answers until enough(ok, others) is true, every node
// answered, or the per-node deadline passed. A reply classifies as
// OutcomeOK when isOK says so. unfinished is nil when every node answered,
// and otherwise f.
func (f *flight) collect(isOK func(any) bool, enough func(ok, others int) bool) (results []NodeResult, ok int, unfinished *flight) {
	t := tally{results: f.results(), isOK: isOK}
	var timer *time.Timer // made on first need
	defer func() {
		if timer != nil {
			putTimer(timer)
		}
	}()
	for waiting := true; waiting && !t.complete() && !enough(t.ok, t.others); {
		if timer == nil {
			timer = getTimer(time.Until(f.deadline))
		}
		select {
		case a := <-f.answers:
			t.record(a)
		case <-timer.C:
			f.stopWaiting(&t, true)
			waiting = false
		case <-f.parent.Done():
			f.stopWaiting(&t, errors.Is(f.parent.Err(), context.DeadlineExceeded))
			waiting = false
		}
	}
	if !t.complete() {
		return t.results, t.ok, f
	}
	return t.results, t.ok, nil
}

// results returns a result per node, named, for collect to fill in: in the
// flight's own memory when they fit.
func (f *flight) results() []NodeResult {
	var results []NodeResult
	if n := len(f.nodes.conns); n <= inlineNodes {
		results = f.resultBuf[:n]
	} else {
		results = make([]NodeResult, n)
	}
	for i, conn := range f.nodes.conns {
		results[i].Node = conn.Name()
	}
	return results
}

// stopWaiting records the answers that already arrived and, when the
// per-node deadline passed, marks the nodes still silent as timed out.
func (f *flight) stopWaiting(t *tally, timedOut bool) {
	f.drain(t)
	if timedOut {
		t.markSilent(f.timeout)
	}
}

// drain records the answers that already arrived.
func (f *flight) drain(t *tally) {
	for {
		select {
		case a := <-f.answers:
			t.record(a)
		default:
			return
		}
	}
}

// tally is the answers of a fan-out so far.
type tally struct {
	results    []NodeResult
	isOK       func(any) bool
	ok, others int
}

// record classifies one node's answer.
func (t *tally) record(a answer) {
	r := classify(t.results[a.node].Node, a.val, a.err, a.took, t.isOK)
	t.results[a.node] = r
	if r.Outcome == OutcomeOK {
		t.ok++
	} else {
		t.others++
	}
}

// complete reports that every node answered.
func (t *tally) complete() bool { return t.ok+t.others == len(t.results) }

// markSilent marks the nodes that have not answered as timed out after
// timeout.
func (t *tally) markSilent(timeout time.Duration) {
	for i := range t.results {
		if t.results[i].Outcome == OutcomeNoAnswer {
			t.results[i].Outcome, t.results[i].Err, t.results[i].Latency = OutcomeTimeout, context.DeadlineExceeded, timeout
		}
	}
}

// ask sends req to node i from the calling goroutine, by itself.
func (n *nodes) ask(ctx context.Context, req *request, i int) (any, error) {
	if req.local != nil {
		if v, ok := req.local(i); ok {
			return v, nil
		}
	}
	p := n.pipes[i]
	deadline, _ := ctx.Deadline()
	v, acked, err := p.eval(ctx, deadline, req.script, req.keys, req.args)
	return decodeReply(req, i, v, p.checkReplicated(req.script, err, acked))
}

// classify turns one node's reply into a NodeResult.
func classify(node string, val any, err error, took time.Duration, isOK func(any) bool) NodeResult {
	r := NodeResult{Node: node, Latency: took}
	switch {
	case err == nil && isOK(val):
		r.Outcome = OutcomeOK
	case err == nil:
		r.Outcome = OutcomeHeld
	case isTimeout(err):
		r.Outcome, r.Err = OutcomeTimeout, err
	default:
		r.Outcome, r.Err = OutcomeError, err
	}
	return r
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// isOne reports a script's integer 1 reply.
func isOne(v any) bool { n, ok := v.(int64); return ok && n == 1 }

// unasked returns a result per node for a request that was never sent.
func (n *nodes) unasked() []NodeResult {
	results := make([]NodeResult, len(n.conns))
	for i, conn := range n.conns {
		results[i].Node, results[i].Outcome = conn.Name(), OutcomeNotAsked
	}
	return results
}

// lagging lists the nodes whose request of a fan-out was still under way
// when the fan-out returned (unanswered, or past the node timeout but
// possibly still on its way), and that fan-out.
type lagging struct {
	nodes   []int
	buf     [inlineNodes]int // nodes' backing array while it fits
	earlier *flight
	timeout time.Duration // for a request sent after the wait
	// release: the requests sent after the wait release the lock that the
	// earlier fan-out acquired (see submitAfter).
	release bool
}

// laggingNodes returns the nodes of results whose request may not have
// ended, or nil when the fan-out finished.
func laggingNodes(results []NodeResult, unfinished *flight, timeout time.Duration) *lagging {
	if unfinished == nil {
		return nil
	}
	lag := &lagging{earlier: unfinished, timeout: timeout}
	lag.nodes = lag.buf[:0]
	for i, r := range results {
		if r.Outcome == OutcomeNoAnswer || r.Outcome == OutcomeTimeout {
			lag.nodes = append(lag.nodes, i)
		}
	}
	return lag
}

// within returns lag with timeout for the request sent after the wait; nil
// stays nil.
func (lag *lagging) within(timeout time.Duration) *lagging {
	if lag == nil || lag.timeout == timeout {
		return lag
	}
	return &lagging{nodes: lag.nodes, earlier: lag.earlier, timeout: timeout}
}

// releasing returns lag for the release of the lock its fan-out acquired;
// nil stays nil.
func (lag *lagging) releasing() *lagging {
	if lag == nil {
		return nil
	}
	r := *lag
	r.release = true
	return &r
}

// holds reports whether a request to node must wait for the node's earlier
// request, which lags and has not ended yet; a nil lagging holds none.
func (lag *lagging) holds(node int) bool {
	if lag == nil || !slices.Contains(lag.nodes, node) {
		return false
	}
	return !lag.earlier.done.Load()
}

// submitAfter submits calls to their lagging node once the earlier
// fan-out's requests have all ended: over a connection pool a release or an
// extension could otherwise reach such a node first; the late acquisition
// would then hold the key there until it expires, or miss the extension.
// The first call then gets a node timeout of its own, since the fan-out it
// belongs to has usually been decided by then; the others keep theirs.
//
// A key's calls wait so behind at most maxLagChain earlier ones on a node:
// a node that stopped answering would otherwise hold a chain of the key's
// requests, each waiting for the one before it, that grows with every
// request. A release cancels its acquisition's call that has not left yet,
// and is answered for the node without asking it (the key is not there);
// past the bound, any other call fails unsent (errStillLagging), a vote not
// given.
func (lag *lagging) submitAfter(p *pipe, calls ...*call) {
	depth := int32(1)
	if prior := lag.earlier.callTo(calls[0].node); prior != nil && prior.state.Load() == callDeferred {
		switch {
		case lag.release && prior.state.CompareAndSwap(callDeferred, callCancelled):
			p.deliver(calls[0], int64(0), nil) // "not held"
			p.refuseWith(calls[1:], errStillLagging)
			return
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
	lag.earlier.afterLanding(func() { lag.submitDeferred(p, calls) })
}

// maxLagChain bounds how many of a key's calls to a node wait, one behind
// the other, for the earlier ones to end (see lagging.submitAfter).
const maxLagChain = 4

// submitDeferred submits the calls that submitAfter deferred, except those
// cancelled meanwhile, which fail unsent.
func (lag *lagging) submitDeferred(p *pipe, calls []*call) {
	live := calls[:0:0]
	for _, cl := range calls {
		if cl.state.CompareAndSwap(callDeferred, callSubmitted) {
			live = append(live, cl)
		} else {
			p.deliver(cl, nil, errStillLagging)
		}
	}
	if len(live) == 0 {
		return
	}
	first := live[0]
	first.ctx = uncancelled(first.ctx)
	first.deadline = time.Now().Add(lag.timeout)
	p.submit(live...)
}

// errStillLagging is the error of a call not sent because the key's earlier
// requests to its node have not been sent yet (see lagging.submitAfter).
var errStillLagging = errors.New("not sent: the node has yet to answer the key's earlier requests")

// timers keeps stopped timers for reuse: a waiting goroutine, or a
// fan-out, would otherwise allocate one, and its channel, every time.
var timers sync.Pool

// getTimer returns a timer that fires after d, reused when one is free.
func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// putTimer stops t and keeps it for reuse. Since Go 1.23 a stopped timer's
// channel holds no stale value, so a reused timer fires only for its new
// duration.
func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

package nodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// Set is the Redis nodes of a client, each with the queue of requests to
// it (see pipe), and the fan-out of one request to all of them at once.
type Set struct {
	conns     []Conn
	pipes     []*pipe       // one per conn
	closed    chan struct{} // closed by close: the pipes' idle senders end
	closeOnce sync.Once
	// inflight counts requests to single nodes not yet answered, some
	// possibly after their fan-out returned; Drain waits for them.
	inflight inflight
	// callers hands out the contexts of the fan-outs' calls sent by
	// themselves; patientCalls those of the pipes' senders when the nodes
	// are several (see pipe.patient), shared by the calls of a fan-out.
	callers      callerDeadline
	patientCalls callerDeadline
	// replies remembers the long reply times (see RecentReplyTime).
	replies replyTimes
	// gates hold nodes out of every fan-out (see Hold).
	gates gates
	// lateFailure, when set, hears of the requests that failed after
	// their fan-out returned (see OnLateFailure).
	lateFailure func(node int, script *wire.Script, err error, took time.Duration)
}

// OnLateFailure makes the Set call fn for each request that fails (times
// out, or answers an error) after its fan-out returned without it: the
// only news of a node that never answers while the others decide every
// call. fn runs on the request's goroutine and must not block; set it
// before the first request.
func (n *Set) OnLateFailure(fn func(node int, script *wire.Script, err error, took time.Duration)) {
	n.lateFailure = fn
}

// New returns the Set of conns. replicas is how many replicas must confirm
// the writes of a script that grants or extends a lock (wire.Script's
// Replicated), by WAIT; 0 for none. functions lets the nodes run the
// scripts as functions of wire.Library, by FCALL, where their Conns can
// (see functions); the scripts of a replicated write go by EVALSHA, with
// their WAIT.
func New(conns []Conn, replicas int, functions bool) *Set {
	n := &Set{conns: append([]Conn(nil), conns...)}
	n.closed = make(chan struct{})
	n.patientCalls.detached = true
	n.pipes = make([]*pipe, len(conns))
	n.gates = make(gates, len(conns))
	for i, conn := range n.conns {
		n.pipes[i] = &pipe{conn: conn, node: i, cluster: IsCluster(conn), replicas: replicas,
			inline: honoursContext(conn), patient: len(conns) > 1, patientCalls: &n.patientCalls, work: make(chan []*call), stop: n.closed, functions: newFunctions(conn, functions)}
	}
	return n
}

// RememberReplies makes the Set remember the replies that take longer than
// over, for RecentReplyTime; it must be called before the first request.
func (n *Set) RememberReplies(over time.Duration) { n.replies.over = over }

// heard remembers how long a node took to answer a request sent under
// timeout (see RecentReplyTime): took, when the node replied. A Set of one
// node also counts a request that timed out as a reply that took its
// timeout: a Conn that ends a request at its deadline drops the node's late
// reply, which a node of several waits for (see pipe.patient), and the
// timeout would never rise past the replies heard within it. A request
// that its caller's own earlier deadline ended says nothing of the node.
func (n *Set) heard(err error, took, timeout time.Duration) {
	if err == nil || len(n.conns) == 1 && IsTimeout(err) && took >= timeout-timeout/32 {
		n.replies.observe(took)
	}
}

// RecentReplyTime returns the longest time a node took lately to reply to
// a request, fan-outs' late replies included, as this process saw it: it
// halves every second once no reply takes as long, and is 0 when none took
// longer than RememberReplies' bound since. A node of several that does
// not reply (silent, or failing) raises nothing; the only node of a Set
// raises it by its timeouts too (see heard).
func (n *Set) RecentReplyTime() time.Duration { return n.replies.recent() }

// Drain waits for the requests still in flight, at most bound, and ends
// the pipes: their idle senders end, and calls still queued or made later
// fail unsent. A silent node's requests still under way end when their
// connections close, or at the connection's own read timeout.
func (n *Set) Drain(bound time.Duration) {
	t := time.NewTimer(bound)
	select {
	case <-n.inflight.settled():
	case <-t.C:
	}
	t.Stop()
	n.closeOnce.Do(func() { close(n.closed) })
	for _, p := range n.pipes {
		p.batchDeadlines.stop()
	}
}

// Close closes every node connection at once, and waits for them at most
// bound: a client library may take seconds to give up a connection to a
// node that stopped answering (rueidis waits for its pending replies), and
// finishes closing it in the background then.
func (n *Set) Close(bound time.Duration) error {
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

// Fanout sends req to every node at once and collects the answers until
// enough(ok, others) is true, every node answered, or timeout passed. Nodes
// that answer later are not waited for: their requests end by themselves
// within the timeout. A reply classifies as OK when isOK says so.
func (n *Set) Fanout(ctx context.Context, timeout time.Duration, req *Request, isOK func(any) bool, enough func(ok, others int) bool) (results []Result, ok int) {
	results, ok, _ = n.TrackedFanout(ctx, timeout, req, nil, isOK, enough)
	return results, ok
}

// TrackedFanout is Fanout that also returns, when some nodes were not heard
// out, the fan-out whose requests to them are still to end; nil when every
// node answered. On the nodes of lag, req waits for their earlier request
// to end (see Lagging).
func (n *Set) TrackedFanout(ctx context.Context, timeout time.Duration, req *Request, lag *Lagging, isOK func(any) bool, enough func(ok, others int) bool) (results []Result, ok int, unfinished *Flight) {
	if len(n.conns) == 1 && !lag.Holds(0) && n.Held(0) == nil && n.pipes[0].tryInline() {
		// One node with room: ask it from this goroutine.
		start := time.Now()
		val, err := n.ask(n.pipes[0].callers.until(ctx, start.Add(timeout), timeout), req, 0)
		n.pipes[0].done()
		took := time.Since(start)
		n.heard(err, took, timeout)
		req.alone[0] = classify(n.conns[0].Name(), val, err, took, isOK)
		results = req.alone[:]
		if results[0].Outcome == OK {
			ok = 1
		}
		return results, ok, nil
	}
	f := n.NewFlight(ctx, timeout)
	f.submit(f.calls(req), lag)
	return f.Collect(isOK, enough)
}

// Flight is one fan-out under way: a request to every node, sharing one
// start and one per-node deadline, and the answers coming back.
type Flight struct {
	nodes    *Set
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
	// keep has the calls still queued sent once the caller's context
	// ended (see Keep).
	keep atomic.Bool
	// tallied is what Collect returned, when some nodes had not answered.
	tallied []Result
	// returned: Collect returned before every node answered.
	returned atomic.Bool

	mu     sync.Mutex
	landed bool     // every node answered; under mu, for onLand
	onLand []func() // run once every node answered; in onLandBuf while it fits
	// onLandBuf holds the first functions of onLand: a fan-out that some
	// nodes answer late has one or two.
	onLandBuf [2]func()
	// nodeCtx bounds the requests sent by themselves, taken on the first
	// (see callerDeadline): requests that go in batches need none.
	nodeCtx context.Context

	// The calls of a fan-out to at most InlineNodes nodes live here, in
	// the flight's own allocation.
	callBuf [InlineNodes]call
	ptrBuf  [InlineNodes]*call
	bufUsed bool
	// The results that collect returns live here too, when they fit.
	resultBuf [InlineNodes]Result
}

// InlineNodes is the most nodes whose calls a Flight holds without
// allocating them apart; callers size their own buffers by it.
const InlineNodes = 5

// NewFlight starts the clock of a fan-out; each of its calls must be
// answered, or submitted to be.
func (n *Set) NewFlight(ctx context.Context, timeout time.Duration) *Flight {
	f := &Flight{nodes: n, parent: ctx, timeout: timeout, start: time.Now(), answers: make(chan answer, len(n.conns))}
	f.deadline = f.start.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(f.deadline) {
		f.deadline = d
	}
	f.pending.Store(int32(len(n.conns)))
	n.inflight.add(len(n.conns))
	return f
}

// deliver records one node's answer. The last one ends the flight: the
// caller may have returned before.
func (f *Flight) deliver(a answer) {
	f.nodes.heard(a.err, a.took, f.timeout)
	if a.err != nil && f.returned.Load() && f.nodes.lateFailure != nil && !errors.Is(a.err, context.Canceled) {
		if cl := f.sent[a.node]; cl != nil && cl.req != nil {
			f.nodes.lateFailure(a.node, cl.req.Script, a.err, a.took)
		}
	}
	f.answers <- a
	f.nodes.inflight.done()
	if f.pending.Add(-1) == 0 {
		f.done.Store(true)
		f.mu.Lock()
		f.landed = true
		then := f.onLand
		f.onLand = nil
		f.mu.Unlock()
		for _, fn := range then {
			fn()
		}
		clear(then) // onLandBuf keeps nothing alive past its use
	}
}

// nodeContext returns the context to send cl with by itself, bounded by
// cl's deadline, and the function to call once it was sent. Calls that
// kept the flight's context and deadline share one context, made on first
// need.
func (f *Flight) nodeContext(cl *call) (context.Context, context.CancelFunc) {
	if cl.ctx != f.parent || !cl.deadline.Equal(f.deadline) {
		return withDeadline(cl.ctx, cl.deadline)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodeCtx == nil {
		// Shared with the caller's next fan-outs whose deadlines fall
		// close: it ends at its deadline.
		f.nodeCtx = f.nodes.callers.until(f.parent, f.deadline, f.timeout)
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

// Uncancelled returns ctx without its cancellation and deadline, and ctx
// itself when it has neither.
func Uncancelled(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// Keep has f's calls that are still queued sent even once the caller's
// context ends, up to their deadline: the caller keeps what the fan-out
// won (a grant, an extension), and the nodes not asked yet should hold it
// too, lest it rest on a bare majority. A nil Flight has nothing queued.
// The caller must call it before it returns what the fan-out won, and so
// before its context can end.
func (f *Flight) Keep() {
	if f != nil {
		f.keep.Store(true)
	}
}

// AfterLanding runs fn once every node answered: at once if they have.
func (f *Flight) AfterLanding(fn func()) {
	f.mu.Lock()
	if !f.landed {
		if f.onLand == nil {
			f.onLand = f.onLandBuf[:0]
		}
		f.onLand = append(f.onLand, fn)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	fn()
}

// calls returns req's call to each node, nil for the nodes req answers
// itself (see request.local) and those held out (see Hold), whose answers
// are delivered at once.
func (f *Flight) calls(req *Request) []*call {
	var calls []*call
	var slab []call
	if n := len(f.nodes.conns); n <= InlineNodes && !f.bufUsed {
		f.bufUsed = true
		calls, slab = f.ptrBuf[:n], f.callBuf[:n]
	} else {
		calls, slab = make([]*call, n), make([]call, n)
	}
	for i := range calls {
		if err := f.nodes.Held(i); err != nil {
			f.deliver(answer{node: i, err: err})
			continue
		}
		if req.Local != nil {
			if v, ok := req.Local(i); ok {
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
func (f *Flight) callTo(node int) *call {
	if f.sent == nil {
		return nil
	}
	return f.sent[node]
}

// submit hands each call to its node's pipe; on the nodes of lag, once
// their earlier request has ended.
func (f *Flight) submit(calls []*call, lag *Lagging) {
	for i, cl := range calls {
		switch {
		case cl == nil:
		case lag.Holds(i):
			lag.submitAfter(f.nodes.pipes[i], cl)
		default:
			f.nodes.pipes[i].submit(cl.asBatch()...)
		}
	}
}

// Collect gathers the answers until enough(ok, others) is true, every node
// answered, or the per-node deadline passed. A reply classifies as
// OK when isOK says so. unfinished is nil when every node answered,
// and otherwise f.
func (f *Flight) Collect(isOK func(any) bool, enough func(ok, others int) bool) (results []Result, ok int, unfinished *Flight) {
	t := tally{results: f.results(), isOK: isOK}
	var timer *time.Timer // made on first need
	defer func() {
		if timer != nil {
			PutTimer(timer)
		}
	}()
	for waiting := true; waiting && !t.complete() && !enough(t.ok, t.others); {
		if timer == nil {
			timer = GetTimer(time.Until(f.deadline))
		}
		select {
		case a := <-f.answers:
			t.record(a)
		case <-timer.C:
			f.stopWaiting(&t, true)
			f.nodes.heard(context.DeadlineExceeded, time.Since(f.start), f.timeout)
			waiting = false
		case <-f.parent.Done():
			f.stopWaiting(&t, errors.Is(f.parent.Err(), context.DeadlineExceeded))
			waiting = false
		}
	}
	if !t.complete() {
		f.tallied = t.results
		f.returned.Store(true)
		return t.results, t.ok, f
	}
	return t.results, t.ok, nil
}

// Lagging returns the nodes whose request had not ended when Collect
// returned, to hold the key's later requests to them behind it (see
// Lagging); nil for a nil Flight, one whose nodes all answered.
func (f *Flight) Lagging() *Lagging {
	if f == nil {
		return nil
	}
	return LaggingNodes(f.tallied, f, f.timeout)
}

// Landed hands record each answer that arrived since Collect returned,
// classified by isOK; called from AfterLanding, it hands them all.
func (f *Flight) Landed(isOK func(any) bool, record func(node int, r Result)) {
	for {
		select {
		case a := <-f.answers:
			record(a.node, classify(f.nodes.conns[a.node].Name(), a.val, a.err, a.took, isOK))
		default:
			return
		}
	}
}

// Towing sends first to every node, each followed, in the same script
// call, by the call of then's request thenReq to that node (then is a
// Flight from NewFlight): on each node the two run one after the other,
// in one round trip. lag holds first back on its nodes as in
// TrackedFanout. It returns first's Flight, to Collect.
func (n *Set) Towing(ctx context.Context, timeout time.Duration, first *Request, lag *Lagging, then *Flight, thenReq *Request) *Flight {
	f := n.NewFlight(ctx, timeout)
	firsts, thens := f.calls(first), then.calls(thenReq)
	for i, cl := range firsts {
		group := make([]*call, 0, 2)
		for _, c := range [2]*call{cl, thens[i]} {
			if c != nil { // answered unsent (see calls)
				group = append(group, c)
			}
		}
		if len(group) == 0 {
			continue
		}
		if lag.Holds(i) {
			lag.submitAfter(n.pipes[i], group...)
		} else {
			n.pipes[i].submit(group...)
		}
	}
	return f
}

// Len returns the number of nodes.
func (n *Set) Len() int { return len(n.conns) }

// results returns a result per node, named, for collect to fill in: in the
// flight's own memory when they fit.
func (f *Flight) results() []Result {
	var results []Result
	if n := len(f.nodes.conns); n <= InlineNodes {
		results = f.resultBuf[:n]
	} else {
		results = make([]Result, n)
	}
	for i, conn := range f.nodes.conns {
		results[i].Node = conn.Name()
	}
	return results
}

// stopWaiting records the answers that already arrived and, when the
// per-node deadline passed, marks the nodes still silent as timed out.
func (f *Flight) stopWaiting(t *tally, timedOut bool) {
	f.drain(t)
	if timedOut {
		t.markSilent(f.timeout)
	}
}

// drain records the answers that already arrived.
func (f *Flight) drain(t *tally) {
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
	results    []Result
	isOK       func(any) bool
	ok, others int
}

// record classifies one node's answer.
func (t *tally) record(a answer) {
	r := classify(t.results[a.node].Node, a.val, a.err, a.took, t.isOK)
	t.results[a.node] = r
	if r.Outcome == OK {
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
		if t.results[i].Outcome == NoAnswer {
			t.results[i].Outcome, t.results[i].Err, t.results[i].Latency = Timeout, context.DeadlineExceeded, timeout
		}
	}
}

// Call runs s on node i by itself, from the calling goroutine, outside
// every batch and fan-out: by FCALL where the node runs the library's
// functions (so that a no-writes function passes a CLIENT PAUSE WRITE), by
// EVALSHA elsewhere. It is for a request of one node, as a listing's step.
func (n *Set) Call(ctx context.Context, i int, s *wire.Script, keys, args []string) (any, error) {
	v, _, err := n.pipes[i].eval(ctx, time.Time{}, s, keys, args)
	return v, err
}

// ask sends req to node i from the calling goroutine, by itself.
func (n *Set) ask(ctx context.Context, req *Request, i int) (any, error) {
	if req.Local != nil {
		if v, ok := req.Local(i); ok {
			return v, nil
		}
	}
	p := n.pipes[i]
	deadline, _ := ctx.Deadline()
	v, acked, err := p.eval(ctx, deadline, req.Script, req.Keys, req.Args)
	return decodeReply(req, i, v, p.checkReplicated(req.Script, err, acked))
}

// classify turns one node's reply into a Result.
func classify(node string, val any, err error, took time.Duration, isOK func(any) bool) Result {
	r := Result{Node: node, Latency: took}
	switch {
	case err == nil && isOK(val):
		r.Outcome = OK
	case err == nil:
		r.Outcome = Held
	case IsTimeout(err):
		r.Outcome, r.Err = Timeout, err
	default:
		r.Outcome, r.Err = Error, err
	}
	return r
}

// IsTimeout reports an error of a request that timed out.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// IsOne reports a script's integer 1 reply.
func IsOne(v any) bool { n, ok := v.(int64); return ok && n == 1 }

// timers keeps stopped timers for reuse: a waiting goroutine, or a
// fan-out, would otherwise allocate one, and its channel, every time.
var timers sync.Pool

// GetTimer returns a timer that fires after d, reused when one is free.
func GetTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

// PutTimer stops t and keeps it for reuse. Since Go 1.23 a stopped timer's
// channel holds no stale value, so a reused timer fires only for its new
// duration.
func PutTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

package nodes

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/hashslot"
	"github.com/redlock-go/redlock/internal/wire"
)

// Requests of concurrent calls to one node share script calls: while
// maxInFlight script calls are under way to a node, its new requests queue,
// and the next call carries up to maxBatch of them at once through the
// batch script. One script call then costs the node and the client what
// many would: a single round trip, a single script invocation, and as few
// system calls. A lone request is sent at once and by itself, with its own
// script, so an idle client waits for nothing.
const (
	maxInFlight = 2
	maxBatch    = 128
	// maxQueued bounds the calls waiting for one node. Only a node that
	// stopped answering fills it: its senders are stuck on their reads
	// (go-redis gives a read up only at its ReadTimeout), so the fan-outs
	// go on without it while its queue grows with every request. Past the
	// bound, calls fail at once (errBacklog) and the client's memory stays
	// flat; a healthy node under the heaviest load queues a few hundred.
	maxQueued = 16 * maxBatch
)

// errBacklog is the error of a call refused because its node's queue is
// full: the node has not answered its earlier requests.
var errBacklog = errors.New("not sent: the node has not answered its earlier requests, and its queue is full")

// errPipeClosed is the error of a call made after Close gave up waiting.
var errPipeClosed = errors.New("not sent: the client is closed")

// errWaitedPastTimeout is the error of a call dropped unsent: it waited in
// the queue until its deadline passed.
var errWaitedPastTimeout = errors.New("not sent, waited in the queue past the node timeout")

// NotSent reports an error of a call that was never sent to its node.
func NotSent(err error) bool {
	return errors.Is(err, errBacklog) || errors.Is(err, errPipeClosed) || errors.Is(err, errWaitedPastTimeout) ||
		errors.Is(err, errStillLagging)
}

// Request is one script call that a fan-out makes of every node.
type Request struct {
	Script *wire.Script
	Keys   []string
	Args   []string
	// decode, when set, turns node's reply into the value the fan-out
	// classifies; it runs before the answer reaches the fan-out.
	Decode Decoder
	// Local, when set, answers for node without asking it when ok.
	Local func(node int) (v any, ok bool)
	// LocalAfterLag, when set, is asked as Local is when a call to node
	// that waited for the key's earlier requests there (see
	// Lagging.submitAfter) is about to leave: their replies are in by then.
	LocalAfterLag func(node int) (v any, ok bool)
	// LeavesQueue: the request, a release, also takes its caller's place
	// out of the key's queue, which an earlier request may have made on a
	// node where the acquisition's own request never left: it is sent
	// there anyway (see Lagging.submitAfter).
	LeavesQueue bool
	// alone holds the result of a fan-out to the client's only node made
	// inline, so that it costs no allocation of its own.
	alone [1]Result
}

// Decoder turns a node's reply to a request into the value its fan-out
// classifies.
type Decoder interface {
	Decode(node int, v any) (any, error)
}

// DecodeFunc is a function as a Decoder.
type DecodeFunc func(node int, v any) (any, error)

// Decode calls f.
func (f DecodeFunc) Decode(node int, v any) (any, error) { return f(node, v) }

// answer is one node's reply to a fan-out.
type answer struct {
	node int
	val  any
	err  error
	took time.Duration
}

// receiver takes the answers of calls; deliver must not block.
type receiver interface {
	deliver(a answer)
	// nodeContext returns the context to send cl with by itself, bounded
	// by cl's deadline, and the function to call once it was sent.
	nodeContext(cl *call) (context.Context, context.CancelFunc)
}

// States of a call that waits for an earlier one (lagging.submitAfter).
const (
	callReady     int32 = iota // submitted at once, or not yet
	callDeferred               // waits for an earlier fan-out to end
	callSubmitted              // waited, then submitted
	callCancelled              // waited, then cancelled: fails unsent
)

// call is a request on its way to one node.
type call struct {
	req      *Request
	node     int
	ctx      context.Context // a lone call is sent with it, bounded by deadline
	deadline time.Time       // the fan-out stops waiting then
	start    time.Time
	// to receives the reply.
	to receiver
	// joined: the call must leave in the same batch as the one queued
	// before it.
	joined bool
	// state tells a call that waits for an earlier one to end (see
	// lagging.submitAfter) from one submitted or cancelled since.
	state atomic.Int32
	depth int32 // how many deferred calls it waits behind, itself included
	// alone holds the call itself, as a batch of one that costs no
	// allocation of its own.
	alone [1]*call
}

// asBatch returns the call as a batch of one.
func (cl *call) asBatch() []*call {
	cl.alone[0] = cl
	return cl.alone[:]
}

// senderIdle is how long a goroutine that sent a node's requests waits for
// more before it ends: reusing it spares starting a goroutine, and growing
// its stack, for every request.
const senderIdle = time.Second

// pipe queues the calls to one node and sends them in batches.
type pipe struct {
	conn Conn
	node int
	// cluster: the node is a Redis Cluster, where one script call may
	// touch one hash slot only: a batch holds the calls of one slot.
	cluster bool
	// replicas is Options.WaitReplicas: how many replicas must confirm a
	// replicated script's writes (see script.Replicated).
	replicas int
	// inline: the node may be asked from the caller's goroutine, as its
	// Conn returns at the request's deadline (see ContextHonourer).
	inline bool
	// patient: the node is one of several, and its senders' requests wait
	// lateReplyWait past their fan-out's deadline (see requestContext);
	// patientCalls, the Set's, shares their contexts among the pipes.
	patient      bool
	patientCalls *callerDeadline
	// work hands calls to an idle sender; unbuffered, so a send succeeds
	// only when one waits.
	work chan []*call
	stop <-chan struct{} // closed by Client.Close: idle senders end, calls fail

	mu       sync.Mutex
	inFlight int
	queue    []*call

	batchDeadlines sharedDeadline // the batches' contexts
	callers        callerDeadline // the contexts of the calls sent inline

	// functions runs the scripts by FCALL or EVALSHA.
	functions *functions
	// identity holds the node's requests until it is identified (see
	// Set.IdentifyFirst); nil when none is needed.
	identity *firstUse
}

// submit sends calls at once when the node has room, and queues them
// otherwise. Calls submitted together stay together: they leave in one
// batch, in order.
// A full queue, or a closed client, fails them at once.
func (p *pipe) submit(calls ...*call) {
	p.mu.Lock()
	if p.inFlight < maxInFlight {
		p.inFlight++
		p.mu.Unlock()
		p.start(calls)
		return
	}
	if len(p.queue)+len(calls) > maxQueued || p.closed() {
		p.mu.Unlock()
		p.refuse(calls)
		return
	}
	for i, cl := range calls {
		cl.joined = i > 0
	}
	p.queue = append(p.queue, calls...)
	p.mu.Unlock()
}

// refuse fails calls that are not sent: the client is closed, or the node's
// queue is full.
func (p *pipe) refuse(calls []*call) {
	err := errBacklog
	if p.closed() {
		err = errPipeClosed
	}
	p.refuseWith(calls, err)
}

// refuseWith fails calls that are not sent with err.
func (p *pipe) refuseWith(calls []*call, err error) {
	for _, cl := range calls {
		p.deliver(cl, nil, err)
	}
}

// closed reports that Close gave up waiting for the node: nothing more is
// sent to it.
func (p *pipe) closed() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// tryInline reserves room for a call that the caller then sends itself,
// when the node may be asked inline, and must follow with done. A closed
// pipe has none: its calls fail unsent (see submit).
func (p *pipe) tryInline() bool {
	if !p.inline || p.closed() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight < maxInFlight {
		p.inFlight++
		return true
	}
	return false
}

// done gives back the room of a call sent inline; queued calls then leave
// from a goroutine of their own.
func (p *pipe) done() {
	if next := p.next(); next != nil {
		p.start(next)
	}
}

// start sends batch from an idle sender, or from a new one.
func (p *pipe) start(batch []*call) {
	select {
	case p.work <- batch:
	default:
		go p.run(batch)
	}
}

// run sends batch and then whatever queued meanwhile, until the queue is
// empty; then it waits for more, up to senderIdle.
func (p *pipe) run(batch []*call) {
	idle := time.NewTimer(senderIdle)
	defer idle.Stop()
	for {
		for batch != nil {
			p.send(batch)
			batch = p.next()
		}
		idle.Reset(senderIdle)
		select {
		case batch = <-p.work:
		case <-idle.C:
			return
		case <-p.stop:
			return
		}
	}
}

// next takes the next batch off the queue, or gives back the room of the
// caller's batch and returns nil when the queue is empty.
func (p *pipe) next() []*call {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) == 0 {
		p.inFlight--
		return nil
	}
	if p.cluster {
		return p.takeSlot()
	}
	n := min(len(p.queue), maxBatch)
	for n < len(p.queue) && p.queue[n].joined {
		n++
	}
	batch := make([]*call, n)
	copy(batch, p.queue)
	rest := copy(p.queue, p.queue[n:])
	clear(p.queue[rest:])
	p.queue = p.queue[:rest]
	return batch
}

// takeSlot takes the next batch off a Redis Cluster's queue: the calls, in
// order, of the first queued call's hash slot, up to maxBatch of them
// (calls joined to one taken go with it); the others stay queued in order.
// The caller holds p.mu, and the queue is not empty.
func (p *pipe) takeSlot() []*call {
	slot := hashslot.Of(p.queue[0].req.Keys[0])
	var batch []*call
	rest := p.queue[:0]
	taken := false // whether the call before was taken
	for _, cl := range p.queue {
		take := hashslot.Of(cl.req.Keys[0]) == slot && (len(batch) < maxBatch || cl.joined && taken)
		if cl.joined && !taken {
			take = false // it leaves with the call it is joined to
		}
		if take {
			batch = append(batch, cl)
		} else {
			rest = append(rest, cl)
		}
		taken = take
	}
	clear(p.queue[len(rest):])
	p.queue = rest
	return batch
}

// send sends the calls of batch that are still awaited, by themselves or
// together, and delivers every answer.
func (p *pipe) send(batch []*call) {
	if p.closed() {
		p.refuse(batch)
		return
	}
	now := time.Now()
	live := batch[:0]
	for _, cl := range batch {
		if err := abandoned(cl, now); err != nil {
			// Nobody waits for it any more: skip it rather than ask.
			p.deliver(cl, nil, fmt.Errorf("%w: %w", err, errWaitedPastTimeout))
			continue
		}
		live = append(live, cl)
	}
	switch len(live) {
	case 0:
	case 1:
		cl := live[0]
		ctx, sent := p.requestContext(cl)
		defer sent()
		v, acked, err := p.eval(ctx, cl.deadline, cl.req.Script, cl.req.Keys, cl.req.Args)
		p.deliver(cl, v, p.checkReplicated(cl.req.Script, err, acked))
	default:
		p.sendBatch(live)
	}
}

// abandoned returns why cl, still queued at now, is not to be sent: its
// caller's context ended, unless its fan-out keeps it (see Flight.Keep),
// or its deadline passed. It returns nil for a call to send.
func abandoned(cl *call, now time.Time) error {
	if err := cl.ctx.Err(); err != nil && !kept(cl) {
		return err
	}
	if !now.Before(cl.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// kept reports whether cl's fan-out keeps it (see Flight.Keep).
func kept(cl *call) bool {
	f, ok := cl.to.(*Flight)
	return ok && f.keep.Load()
}

// lateReplyWait is how long past its fan-out's deadline a request to a
// node of several waits for its reply (see pipe.requestContext). With the
// default per-node timeout it ends before the adapters' socket timeouts (a
// second), so that a go-redis cluster client, which sends a request again
// after such a timeout, finds its context ended instead.
const lateReplyWait = 500 * time.Millisecond

// requestContext returns the context a sender sends cl with by itself, and
// the function to call once it was sent. On a client of several nodes it
// ends lateReplyWait after the fan-out's deadline, keeps cl's context's
// values, and not its cancellation: the fan-out stops waiting at its
// deadline and the other nodes make its quorum, while the request waits
// for a late reply. A Conn that gives a request up at its deadline closes
// the connection (rueidis, and go-redis with ContextTimeoutEnabled): at
// the per-node timeout itself, a node slower than that would cost a new
// connection per request, and many clients starting at once would fail
// each other's first requests for as long as their connections take to
// open. A lone node is asked up to the deadline: no other node answers
// meanwhile.
func (p *pipe) requestContext(cl *call) (context.Context, context.CancelFunc) {
	if p.patient {
		return p.patientCalls.until(cl.ctx, cl.deadline.Add(lateReplyWait), lateReplyWait), func() {}
	}
	return cl.to.nodeContext(cl)
}

// batchScript returns the batch script for the calls of batch: the one
// that runs on a node out of memory when each of their scripts may.
func batchScript(batch []*call) *wire.Script {
	for _, cl := range batch {
		if !cl.req.Script.AllowOOM {
			return wire.BatchScript
		}
	}
	return wire.BatchOOMScript
}

// oomRetry returns the calls of batch whose scripts run on a node out of
// memory (wire.Script.AllowOOM) when err is that node's refusal of the
// whole batch for want of memory and the batch also held calls that may
// not run there; nil otherwise.
func oomRetry(batch []*call, err error) []*call {
	if err == nil || !strings.Contains(err.Error(), "OOM ") {
		return nil
	}
	var freeing []*call
	for _, cl := range batch {
		if cl.req.Script.AllowOOM {
			freeing = append(freeing, cl)
		}
	}
	if len(freeing) == len(batch) {
		return nil
	}
	return freeing
}

// sendBatch runs the calls of batch in one batch script call.
func (p *pipe) sendBatch(batch []*call) {
	var deadline time.Time
	nKeys, nArgs := 0, 0
	for _, cl := range batch {
		if cl.deadline.After(deadline) {
			deadline = cl.deadline
		}
		nKeys += len(cl.req.Keys)
		nArgs += 3 + len(cl.req.Args)
	}
	keys := make([]string, 0, nKeys)
	args := make([]string, 0, nArgs)
	for _, cl := range batch {
		keys = append(keys, cl.req.Keys...)
		args = append(args, cl.req.Script.ForNode(p.cluster).BatchID, strconv.Itoa(len(cl.req.Keys)), strconv.Itoa(len(cl.req.Args)))
		args = append(args, cl.req.Args...)
	}
	ends := deadline
	if p.patient {
		ends = deadline.Add(lateReplyWait) // see requestContext
	}
	ctx := p.batchDeadlines.until(ends)
	v, acked, err := p.eval(ctx, deadline, batchScript(batch), keys, args)
	if freeing := oomRetry(batch, err); freeing != nil {
		// The node is out of memory: the batch's acquisitions are
		// refused, and its releases and extensions, which free memory
		// or refresh an expiry, are sent again by themselves, as each
		// would have run alone (see wire.Script.AllowOOM). A release
		// that ran before the refusal (EVALSHA runs a script up to its
		// first refused command) finds its key gone the second time.
		for _, cl := range batch {
			if !cl.req.Script.AllowOOM {
				p.deliver(cl, nil, err)
			}
		}
		p.send(freeing)
		return
	}
	replies, ok := v.([]any)
	if err == nil && (!ok || len(replies) != len(batch)) {
		err = fmt.Errorf("redlock: unexpected reply to the batch script: %d replies for %d requests", len(replies), len(batch))
	}
	for i, cl := range batch {
		if err != nil {
			p.deliver(cl, nil, err)
			continue
		}
		if e, isErr := replies[i].(error); isErr {
			p.deliver(cl, nil, e)
			continue
		}
		p.deliver(cl, replies[i], p.checkReplicated(cl.req.Script, nil, acked))
	}
}

// deliver decodes a reply and hands it to its call. A grant or extension
// whose replicas did not confirm it (errReplicasBehind) is delivered as an
// error; any other reply of the same call stands.
func (p *pipe) deliver(cl *call, v any, err error) {
	v, err = decodeReply(cl.req, cl.node, v, err)
	cl.to.deliver(answer{node: cl.node, val: v, err: err, took: time.Since(cl.start)})
}

// decodeReply decodes node's reply to req. err may be an errReplicasBehind
// that applies only if the reply wrote a lock: a grant or an extension.
func decodeReply(req *Request, node int, v any, err error) (any, error) {
	var behind *errReplicasBehind
	if err != nil {
		if behind = replicasBehind(err); behind != nil {
			err = nil
		}
	}
	if err == nil && req.Decode != nil {
		v, err = req.Decode.Decode(node, v)
	}
	if err == nil && behind != nil && IsOne(v) {
		return nil, behind
	}
	return v, err
}

// replicasBehind returns the *errReplicasBehind in err's chain, or nil. The
// target errors.As needs escapes to the heap; in a function of its own,
// only the replies with an error pay for it.
func replicasBehind(err error) *errReplicasBehind {
	var behind *errReplicasBehind
	if errors.As(err, &behind) {
		return behind
	}
	return nil
}

// eval runs s on the node (its Redis Cluster variant on a cluster, see
// script.forNode); for a replicated script with Options.WaitReplicas set,
// then WAIT on the same connection, up to deadline (acked is -1 otherwise).
func (p *pipe) eval(ctx context.Context, deadline time.Time, s *wire.Script, keys, args []string) (v any, acked int64, err error) {
	if err := p.identity.wait(ctx, p.node); err != nil {
		return nil, -1, err
	}
	s = s.ForNode(p.cluster)
	if !p.cluster {
		keys = wire.ServerKeys(keys)
	}
	if p.replicas == 0 || !s.Replicated && !s.IsBatch() {
		v, err = p.functions.call(ctx, p.conn, s, keys, args)
		return v, -1, asNoAuth(err)
	}
	// WAIT gets three quarters of the time left, so that its reply (the
	// replicas that did confirm) arrives before the deadline; WAIT 0 would
	// wait for ever: wait at least a millisecond. A server ends a WAIT only
	// at its first tick past the timeout (10 a second by default): the
	// request ends at seven eighths, where the Conn returns the script's
	// reply with no replica confirmed, still in time.
	left := time.Until(deadline)
	timeout := max((left * 3 / 4).Truncate(time.Millisecond), time.Millisecond)
	ctx, cancel := context.WithTimeout(ctx, left*7/8)
	defer cancel()
	v, acked, err = p.conn.(replicaWaiter).EvalSHAWait(ctx, p.replicas, timeout, s.SHA1, s.Source, keys, args...)
	return v, acked, asNoAuth(err)
}

// checkReplicated returns err, or an errReplicasBehind when s is replicated
// and fewer replicas than asked confirmed its writes.
func (p *pipe) checkReplicated(s *wire.Script, err error, acked int64) error {
	if err != nil || acked < 0 || !s.Replicated || acked >= int64(p.replicas) {
		return err
	}
	return &errReplicasBehind{acked: acked, want: p.replicas}
}

// errReplicasBehind is the error of a grant or an extension that fewer
// replicas confirmed than Options.WaitReplicas asks for: a failover could
// lose it, so it does not count.
type errReplicasBehind struct {
	acked int64
	want  int
}

func (e *errReplicasBehind) Error() string {
	return fmt.Sprintf("written, but only %d of the %d replicas asked for (Options.WaitReplicas) confirmed it in time: a failover could lose it", e.acked, e.want)
}

// batchDeadlineSlack is how much later than its latest call's deadline a
// batch's context may end. Batches whose deadlines fall that close share
// one context, so that a busy node does not cost a context and a timer per
// batch; the fan-outs stop waiting at their own deadlines either way.
const batchDeadlineSlack = time.Millisecond

// sharedDeadline hands out contexts without values that end at a given
// deadline or up to batchDeadlineSlack later, one for many deadlines. Each
// ends by its own timer; stop ends the latest at once.
type sharedDeadline struct {
	mu     sync.Mutex
	ctx    context.Context
	end    time.Time
	cancel context.CancelFunc
}

// until returns a context that ends no earlier than deadline, and no more
// than batchDeadlineSlack later.
func (d *sharedDeadline) until(deadline time.Time) context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil || d.end.Before(deadline) || d.end.Sub(deadline) > batchDeadlineSlack {
		// The context replaced, if any, ends at its deadline.
		d.end = deadline.Add(batchDeadlineSlack)
		d.ctx, d.cancel = context.WithDeadline(context.Background(), d.end)
	}
	return d.ctx
}

// stop ends the latest context, for a client whose requests all ended.
func (d *sharedDeadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		d.cancel()
		d.ctx, d.cancel = nil, nil
	}
}

// Reply is a node's reply to one request of SendTogether.
type Reply struct {
	Val any
	Err error
}

// SendTogether sends reqs to node in one script call, in order, and
// returns each one's reply, decoded; it blocks until the node answered or
// the request's context ended (see requestContext). It is how a caller checks that a batch answers each
// request as the request alone would be answered.
func (n *Set) SendTogether(node int, deadline time.Time, reqs []*Request) []Reply {
	batch := make([]*call, len(reqs))
	replies := make([]Reply, len(reqs))
	done := make(chan struct{}, len(reqs))
	for i, r := range reqs {
		to := replyReceiver{reply: &replies[i], done: done}
		batch[i] = &call{req: r, node: node, ctx: context.Background(), deadline: deadline, start: time.Now(), to: to}
	}
	n.pipes[node].send(batch)
	for range reqs {
		<-done
	}
	return replies
}

// replyReceiver writes a call's answer to reply.
type replyReceiver struct {
	reply *Reply
	done  chan<- struct{}
}

func (r replyReceiver) deliver(a answer) {
	*r.reply = Reply{Val: a.val, Err: a.err}
	r.done <- struct{}{}
}

func (r replyReceiver) nodeContext(cl *call) (context.Context, context.CancelFunc) {
	return withDeadline(cl.ctx, cl.deadline)
}

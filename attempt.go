package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wire"
)

// attempt is one acquisition attempt: its token, its request and the
// nodes' replies.
type attempt struct {
	key     string
	token   string
	ttl     time.Duration
	delay   time.Duration // the lock-delay (WithLockDelay)
	start   time.Time     // carries the monotonic clock reading
	req     *nodes.Request
	replies []acquireReply
	// place, when not nil, is the caller's place in the key's queue of
	// waiting clients, which the attempt goes through (see newAttempt).
	place *queuePlace
	// queuedSince and queuedAs are the lock's, if the attempt wins (see
	// Lock.queuedSince).
	queuedSince, queuedAs string
	// settle: when it fails, it returns once its clean-up is done (see
	// Client.tryAttempt).
	settle bool
	// shared: a reader's attempt (see Client.attemptShared).
	shared bool

	acquire  acquireRequest
	replyBuf [nodes.InlineNodes]acquireReply // replies' backing array while it fits
}

// queuePlace is a waiting caller's place in a key's queue of waiting
// clients on the nodes (see wire.QueueKeys, lua/queued_acquire.lua).
type queuePlace struct {
	// since is when the caller began waiting for the key, in microseconds
	// on its clock, or "" before its first attempt.
	since string
	// behind: its last attempt was refused by a quorum of nodes because
	// the key is held, and every node that did queued it behind at least
	// namedWaiters clients: the next release will name others (see wait.Waker).
	behind bool
	// second: likewise, but behind at least one other client, whom the
	// next release names first (see wait.Wakeup.SetSecond).
	second bool
	// polled: the next attempt comes at the retry delay, no release
	// having woken the caller; with second, it defers to the first in line
	// on the nodes where the key is free (see lua/queued_acquire.lua,
	// mode 4).
	polled bool
	// set: the caller waits for a set of keys (AcquireAll) or for one of
	// a semaphore's permits, and since is set before its first attempt:
	// every attempt defers to the clients queued before it (see
	// lua/queued_acquire.lua).
	set bool
	// newcomer: with set, the attempt is the call's first, which defers
	// only as a newcomer to a mutex does, and queues only when refused.
	newcomer bool
	// passed: with set, the client that let its turn pass before the
	// attempt (wait.Wakeup.Passed), to which it does not defer (see
	// lua/queued_acquire.lua, mode 5); "" when none did.
	passed string
	// asked: the call's last try asked for the key (permits.behind).
	asked bool
	// queued: a try of the call asked for the key, so that the nodes may
	// queue the call there, and it leaves that queue once done; a call
	// never queued for the key has nothing to leave.
	queued bool
	// handoff: the next attempt is the one that this client's release of
	// the key carries (see handoff), which defers to the clients queued
	// before it; newAttempt clears it.
	handoff bool
	// entry is a reader's entry in the key's queue (wire.ReaderEntry);
	// the client's id stands for the client's other waiters.
	entry string
}

// mode returns the mode of the place's next attempt (see
// lua/queued_acquire.lua), first telling whether it is the call's first;
// it clears handoff, which one attempt uses.
func (place *queuePlace) mode(first bool) string {
	switch {
	case place.handoff:
		place.handoff = false
		return "3"
	case first || place.newcomer:
		return "1"
	case place.set && place.passed != "":
		return "5"
	case place.set:
		return "2"
	case place.second && place.polled:
		return "4"
	}
	return "0"
}

// namedWaiters is how many clients, first in a key's queue, a release
// names to try (see lua/next_waiters.lua).
const namedWaiters = 2

// newAttempt prepares an attempt on key, its clock started.
//
// place, when not nil, makes the attempt go through the key's queue of
// waiting clients (see wire.QueueKeys, lua/queued_acquire.lua): place.since is
// when the caller began waiting for key, or "" on its first attempt, which
// is then a newcomer's and sets it to its own clock; its conclusion sets
// place.behind.
//
// shared makes it a shared (read) attempt instead (see
// lua/acquire_shared.lua): place, when not nil, is then the reader's, which
// goes in the key's queue as its client's reader entry when refused, and
// which the lock's release leaves.
func (c *Client) newAttempt(key string, ttl, delay time.Duration, owner string, place *queuePlace, shared bool) *attempt {
	a := &attempt{key: key, ttl: ttl, delay: delay, shared: shared}
	if n := len(c.conns); n <= nodes.InlineNodes {
		a.replies = a.replyBuf[:n]
	} else {
		a.replies = make([]acquireReply, n)
	}
	token, fenceKey, clock, queue, deadlines, waiting := wire.AttemptStrings(key, time.Now(), ttl, delay, owner, c.keys.Tag(key), place != nil || shared)
	a.token = token
	a.req = c.acquirer(&a.acquire, key, fenceKey, token, clock, ttl+delay, a.replies)
	if shared {
		var entry, since string
		if place != nil {
			if place.since == "" {
				place.since = clock
			}
			entry, since = place.entry, place.since
			a.queuedSince, a.queuedAs = since, entry
		}
		a.acquire.share(queue, deadlines, waiting, c.wire.queueLastsMillis, entry, since)
	} else if place != nil {
		first := place.since == ""
		if first {
			place.since = clock
		}
		a.acquire.queue(queue, deadlines, waiting, c.id, place.since, c.wire.queueLasts, place.mode(first), place.passed)
		a.place, a.queuedSince, a.queuedAs = place, place.since, c.id
	}
	a.start = time.Now()
	return a
}

// attempt runs steps 1–5 of the Redlock algorithm once. Each node runs the
// acquire script, which also applies the restart quarantine and bumps the
// key's fencing counter; when the granting nodes' counters disagree, a second
// step raises the ones behind before the lock is handed out.
func (c *Client) attempt(ctx context.Context, key string, ttl, delay time.Duration, owner string, autoRenew bool, place *queuePlace) (*Lock, error) {
	return c.run(ctx, c.newAttempt(key, ttl, delay, owner, place, false), autoRenew)
}

// tryAttempt is attempt for TryAcquire, whose caller may try again at
// once: when it fails, it returns only once its clean-up is done, every
// node having answered the attempt and the release of its grants, or the
// node timeout passed. A crowd of clients looping on TryAcquire otherwise
// livelocks: each next attempt went out while the last one's requests, and
// the releases that follow them, still queued on the slower nodes; the
// nodes' queues grew, an attempt reached the nodes at moments far apart,
// and each node granted a different client's. A client that waits keeps at
// most one request of the key under way per node, an attempt reaches every
// node at about the same moment, and the first after a release wins a
// majority.
func (c *Client) tryAttempt(ctx context.Context, key string, ttl, delay time.Duration, owner string, autoRenew bool) (*Lock, error) {
	a := c.newAttempt(key, ttl, delay, owner, nil, false)
	a.settle = true
	return c.run(ctx, a, autoRenew)
}

// attemptShared is attempt for a shared (read) lock: the node grants it
// while no writer holds the key or waits for it since before the reader
// (place.since; place nil for TryAcquire, which yields to every writer
// waiting).
func (c *Client) attemptShared(ctx context.Context, key string, ttl, delay time.Duration, owner string, autoRenew bool, place *queuePlace) (*Lock, error) {
	return c.run(ctx, c.newAttempt(key, ttl, delay, owner, place, true), autoRenew)
}

// run sends attempt a to every node and concludes; it asks none when ctx
// has ended.
func (c *Client) run(ctx context.Context, a *attempt, autoRenew bool) (*Lock, error) {
	key, ttl := a.key, a.ttl
	if ctx.Err() != nil {
		return nil, c.notAsked(key, ctx)
	}
	// Decided as soon as a quorum granted, or so many refused that none can;
	// requests still under way then are waited for before anything else is
	// sent to their nodes (lagging), so that a release cannot overtake
	// them. Likewise, this attempt waits on the nodes that this client's
	// last release of the key has not heard back from.
	timeout := c.nodeTimeout(ttl)
	trailing := c.waiters.Trailing(key).Within(timeout)
	results, ok, unfinished := c.trackedFanout(ctx, timeout, a.req, trailing, isGranted, c.decided)
	return c.conclude(ctx, a, results, ok, unfinished, autoRenew)
}

// conclude turns the nodes' answers to an attempt into a Lock, or cleans up
// after a failed one.
func (c *Client) conclude(ctx context.Context, a *attempt, results []NodeResult, ok int, unfinished *nodes.Flight, autoRenew bool) (*Lock, error) {
	key, token, ttl := a.key, a.token, a.ttl
	lag := unfinished.Lagging()
	noteRecovering(results, a.replies)
	c.noteVotes(results)
	c.notePlace(a, results, ok)
	if c.tel != nil {
		c.observeNodes(ctx, nil, telemetry.OpAcquire, results)
	}
	until := a.start.Add(ttl - drift(ttl, c.opts.DriftFactor))
	validity := time.Until(until)
	if ok >= c.quorum && validity > 0 {
		// Won: the nodes not asked yet are asked even if ctx ends once
		// Acquire returns, lest the lock rest on a bare majority.
		unfinished.Keep()
		fence, behind := fenceOf(results, a.replies)
		if behind > 0 {
			results, ok = c.raiseFences(ctx, key, token, fence, ttl+a.delay, results, a.replies)
			validity = time.Until(until)
		}
		if ok >= c.quorum && validity > 0 {
			lock := c.granted(ctx, a, until, fence, results, lag, autoRenew)
			c.clearLeftovers(ctx, key, results, true)
			c.clearLeftoversLate(key, unfinished, a.replies)
			return lock, nil
		}
	}
	if !refusedEverywhere(results, lag) {
		c.releaseEverywhere(ctx, key, token, ttl+a.delay, lag, results, a.replies, a.settle)
	}
	c.clearLeftovers(ctx, key, results, false)
	qe := &QuorumError{Op: "acquire", Key: key, OK: ok, Quorum: c.quorum, Validity: validity, Nodes: results, Err: ErrNotAcquired}
	qe.Cause = ctxEnded(ctx)
	return nil, qe
}

// notePlace records where the nodes queued the caller of an attempt that
// the nodes answered. An attempt that too few nodes answered says nothing
// of the queue: the place stays as the last answered one left it, so that
// a waiter queued behind others does not turn into one that tries at the
// retry strategy's pace while the nodes are slow.
func (c *Client) notePlace(a *attempt, results []NodeResult, ok int) {
	if a.place == nil || unanswered(results, c.quorum) > 0 {
		return
	}
	refused := ok < c.quorum
	a.place.behind = refused && queuedBehind(results, a.replies, c.quorum, namedWaiters)
	a.place.second = refused && queuedBehind(results, a.replies, c.quorum, 1)
}

// granted returns the Lock of an attempt a quorum granted, valid until
// until, with its fencing token, its nodes' results and the requests
// still lagging, renewed in the background if autoRenew.
func (c *Client) granted(ctx context.Context, a *attempt, until time.Time, fence uint64, results []NodeResult, lag *nodes.Lagging, autoRenew bool) *Lock {
	lock := newLock(c, a.key, a.token, a.ttl, a.delay, until, autoRenew)
	lock.fence = fence
	lock.queuedSince, lock.queuedAs = a.queuedSince, a.queuedAs
	lock.exclusive = !a.shared
	if len(results) <= nodes.InlineNodes {
		// results may live in the fan-out's own memory.
		lock.nodes = append(lock.nodesBuf[:0], results...)
	} else {
		lock.nodes = results
	}
	lock.lagging = lag
	if c.tel != nil {
		lock.observeGrant(ctx)
	}
	if autoRenew {
		// Once every field is set: renewal reads them.
		lock.startRenewal()
	}
	return lock
}

// queuedBehind reports whether a quorum of nodes refused a queued attempt
// because the key is held, each queueing its caller behind at least ahead
// clients (see queuePlace).
func queuedBehind(results []NodeResult, replies []acquireReply, quorum int, ahead int64) bool {
	refusals, behind := 0, 0
	for i, r := range results {
		if r.Outcome != OutcomeHeld || replies[i].status != acquireHeld {
			continue
		}
		refusals++
		if replies[i].place >= ahead {
			behind++
		}
	}
	return refusals >= quorum && behind == refusals
}

// refusedEverywhere reports that every node answered an attempt, and
// refused it: its token is nowhere, and there is nothing to release. A
// node that granted, failed or did not answer may hold it.
func refusedEverywhere(results []NodeResult, lag *nodes.Lagging) bool {
	if lag != nil {
		return false
	}
	for _, r := range results {
		if !refused(r) {
			return false
		}
	}
	return true
}

// refused reports that a node answered an attempt with a refusal: the
// attempt's token is not there.
func refused(r NodeResult) bool {
	return r.Outcome == OutcomeHeld || r.Outcome == OutcomeRecovering
}

// decided reports that the answers so far settle an acquisition or an
// extension: a quorum said yes, or so many said no that it cannot be reached.
func (c *Client) decided(ok, others int) bool {
	return ok >= c.quorum || others > len(c.conns)-c.quorum
}

// Replies of the acquire script.
const (
	acquireHeld       = 0
	acquireGranted    = 1
	acquireRecovering = 2
	// A shared acquisition refused because a writer waits for the key.
	acquireWriterWaits = 3
)

// acquireReply is one node's answer to the acquire script.
type acquireReply struct {
	heard  bool // the node's reply was decoded
	status int64
	fence  uint64
	left   time.Duration // recovery time left, when recovering
	place  int64         // the caller's place in the key's queue, when queued and refused
}

// acquirer fills in r as the request of one acquisition attempt and
// returns it. fenceKey is fenceKey(key); clock is the caller's clock in
// microseconds, the same on every node, so that nodes that lost or missed
// counters start again from one value and agree, with no second step. It
// decodes each node's reply into replies[i], i being the node's index: the
// caller may read replies[i] once the fan-out recorded node i's answer.
func (c *Client) acquirer(r *acquireRequest, key, fenceKey, token, clock string, ttl time.Duration, replies []acquireReply) *nodes.Request {
	marker, process := c.keys.MarkerKeys(key)
	r.keys = [7]string{key, fenceKey, marker, process}
	r.args = [10]string{token, c.wire.millis(ttl), c.wire.recovery, c.wire.counterMillis(ttl), clock}
	r.replies = replies
	r.Request = nodes.Request{Script: wire.AcquireScript, Keys: r.keys[:4], Args: r.args[:5], Decode: r}
	return &r.Request
}

// queue turns r into the request of a client that waits for the key: the
// client id, when it began waiting, and how long its place lasts (see
// lua/queued_acquire.lua); mode is "1" on a waiter's first attempt, "2"
// on every attempt of a waiter for a set of keys, "3" on the attempt that
// a release of this client carries (see handoff), "4" on a poll of the
// second in line, "5" on a set waiter's attempt that does not defer to
// passed, and "0" otherwise.
func (r *acquireRequest) queue(queue, deadlines, waiting, id, since, lasts, mode, passed string) {
	r.keys[4], r.keys[5], r.keys[6] = queue, deadlines, waiting
	r.args[5], r.args[6], r.args[7], r.args[8] = id, since, lasts, mode
	r.Request.Script, r.Request.Keys, r.Request.Args = wire.QueuedAcquireScript, r.keys[:], r.args[:9]
	if mode == "5" {
		r.args[9] = passed
		r.Request.Args = r.args[:]
	}
}

// share turns r into the request of a shared (read) acquisition, which
// reads the key's queue of waiting clients and, refused, sets its waiting
// mark for lasts milliseconds (see lua/acquire_shared.lua); entry and since
// are the reader entry of a reader that waits in Acquire, and when it began
// waiting, both "" for TryAcquire.
func (r *acquireRequest) share(queue, deadlines, waiting, lasts, entry, since string) {
	r.keys[4], r.keys[5], r.keys[6] = queue, deadlines, waiting
	r.args[5], r.args[6], r.args[7] = lasts, entry, since
	r.Request.Script, r.Request.Keys, r.Request.Args = wire.AcquireSharedScript, r.keys[:], r.args[:8]
}

// acquireRequest is an acquisition's request with its keys, arguments and
// decoder in one allocation.
type acquireRequest struct {
	nodes.Request
	keys    [7]string
	args    [10]string
	replies []acquireReply
}

// Decode implements nodes.Decoder: it records node's reply in replies[node] and
// classifies it by its status.
func (r *acquireRequest) Decode(node int, v any) (any, error) {
	reply, err := decodeAcquire(v)
	if err != nil {
		return nil, err
	}
	reply.heard = true
	r.replies[node] = reply
	return reply.status, nil
}

func decodeAcquire(v any) (acquireReply, error) {
	a, ok := v.([]any)
	if ok && len(a) == 3 {
		status, ok1 := a[0].(int64)
		fence, ok2 := decodeUint(a[1])
		left, ok3 := a[2].(int64)
		if ok1 && ok2 && ok3 && status >= acquireHeld && status <= acquireWriterWaits {
			if status == acquireHeld {
				return acquireReply{status: status, fence: fence, place: left}, nil
			}
			return acquireReply{status: status, fence: fence, left: time.Duration(left) * time.Microsecond}, nil
		}
	}
	return acquireReply{}, fmt.Errorf("redlock: unexpected reply to the acquire script: %v", v)
}

// decodeUint reads a non-negative integer sent as a string or an integer.
func decodeUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case string:
		n, err := strconv.ParseUint(x, 10, 64)
		return n, err == nil
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// isGranted reports the acquire script's grant.
func isGranted(v any) bool { s, ok := v.(int64); return ok && s == acquireGranted }

// noteRecovering turns the refusals of recovering nodes into
// OutcomeRecovering, with the time they have left, and marks the refusals
// of a reader for a writer that waits.
// noteVotes remembers the nodes of results that granted the attempt (see
// Client.voted).
func (c *Client) noteVotes(results []NodeResult) {
	for i := range results {
		if results[i].Outcome == OutcomeOK && !c.voted[i].Load() {
			c.voted[i].Store(true)
		}
	}
}

func noteRecovering(results []NodeResult, replies []acquireReply) {
	for i := range results {
		if results[i].Outcome != OutcomeHeld {
			continue
		}
		switch replies[i].status {
		case acquireRecovering:
			results[i].Outcome = OutcomeRecovering
			results[i].RecoveringLeft = replies[i].left
		case acquireWriterWaits:
			results[i].WriterWaits = true
		}
	}
}

// releaseEverywhere deletes key on every node where it may hold token:
// every node but those whose answer to the acquisition, in acquired, was a
// refusal or that it never reached, including nodes that did not answer it. It waits, up to the
// node timeout, for the nodes that answered; on the others the release
// follows their acquire request, in the background unless settle says to
// wait for it too (see tryAttempt), so that a slow node does not hold up a
// failed Acquire twice. It runs even when ctx has ended.
//
// It does not announce the release: a failed attempt freed at most a
// minority of nodes, and waking waiters for that only splits their votes.
// Nodes that it missed in time are asked again in the background (see
// finishMissed): a failed attempt's grants on a minority, left until their
// TTL, would keep the key from everyone on a crowded key. A node that had
// not answered the attempt in time, and then refused it (its reply decoded
// in replies), is not asked either (see refusedLate). While the node
// timeout is raised (see nodeTimeout), it waits past ctx's deadline at
// most NodeTimeout, as it did before the rise.
func (c *Client) releaseEverywhere(ctx context.Context, key, token string, ttl time.Duration, lag *nodes.Lagging,
	acquired []NodeResult, replies []acquireReply, settle bool) {
	timeout := c.nodeTimeout(ttl)
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, max(time.Until(d), c.opts.NodeTimeout))
	}
	ctx = nodes.Uncancelled(ctx)
	wait := len(c.conns)
	if lag != nil && !settle {
		wait -= lag.Nodes()
	}
	req := releaser(key, token)
	req.Local = func(node int) (any, bool) { // nothing there
		return int64(0), refused(acquired[node]) || nodes.NotSent(acquired[node].Err)
	}
	req.LocalAfterLag = func(node int) (any, bool) { return int64(0), refusedLate(replies[node]) }
	results, _, unfinished := c.trackedFanout(ctx, timeout, req, lag.Releasing(), nodes.IsOne,
		func(ok, others int) bool { return ok+others >= wait })
	c.observeSent(ctx, telemetry.OpRelease, results, req.Local)
	c.waiters.AddTrailing(key, unfinished.Lagging())
	c.finishMissed(key, token, ttl, results, unfinished, false) // nobody waits for its reports
}

// refusedLate reports that a node's reply to an attempt, which came after
// the attempt was decided, refused it, so that the node holds nothing of
// the attempt's: on a crowded key most nodes that a failed attempt did not
// hear from in time answer so, and a release each would cost them a script
// call. A refusal is final as the acquire scripts answer a repeated run of
// a granted request as a grant (see lua/admit.lua): a client that sent the
// request again once its reply was lost hears the grant. Not a reader's
// refusal for a writer that waits: a repeated run of a reader granted
// before the writer came answers so.
func refusedLate(r acquireReply) bool {
	return r.heard && (r.status == acquireHeld || r.status == acquireRecovering)
}

// nodeTimeout returns the per-node timeout for a TTL: NodeTimeout, or twice
// the nodes' recent reply time when longer, up to maxNodeTimeout; and never
// past the validity a TTL can give, as no answer arriving after it is of
// any use.
func (c *Client) nodeTimeout(ttl time.Duration) time.Duration {
	t := c.opts.NodeTimeout
	if late := 2 * c.nodes.RecentReplyTime(); late > t {
		t = max(t, min(late, c.maxNodeTimeout(ttl)))
	}
	return min(t, ttl-drift(ttl, c.opts.DriftFactor))
}

// requestTimeout returns the per-node timeout of a request that no lock's
// TTL bounds (a waiter's renewal of its place, a read of the nodes), as it
// stands: that of a lock of Options.TTL.
func (c *Client) requestTimeout() time.Duration { return c.nodeTimeout(c.opts.TTL) }

// maxNodeTimeout returns how far the per-node timeout rises for a TTL while
// replies come late (see Options.MaxNodeTimeout).
func (c *Client) maxNodeTimeout(ttl time.Duration) time.Duration {
	if c.opts.MaxNodeTimeout > 0 {
		return c.opts.MaxNodeTimeout
	}
	return min(ttl/maxNodeTimeoutDivisor, maxDefaultNodeTimeout)
}

// wireArgs are script arguments that depend only on the options, formatted
// once instead of on every call.
type wireArgs struct {
	ttl           time.Duration
	ttlMillis     string // Options.TTL
	counterTTL    string // counter TTL for Options.TTL, in milliseconds
	recoveryDelay time.Duration
	recovery      string // Options.RecoveryDelay in microseconds; "0" when off
	queueLasts    string // wire.QueueLasts, in microseconds
	// queueLastsMillis is wire.QueueLasts in milliseconds: how long a
	// refused reader's waiting mark lasts (see lua/waiting.lua).
	queueLastsMillis string
	nodeTimeout      time.Duration
	namedArg         string // namedLasts of Options.NodeTimeout, in microseconds
}

func newWireArgs(o Options) wireArgs {
	w := wireArgs{
		ttl:              o.TTL,
		ttlMillis:        strconv.FormatInt(o.TTL.Milliseconds(), 10),
		counterTTL:       strconv.FormatInt(counterLife(o.TTL, o.RecoveryDelay).Milliseconds(), 10),
		recoveryDelay:    o.RecoveryDelay,
		recovery:         "0",
		queueLasts:       strconv.FormatInt(wire.QueueLasts.Microseconds(), 10),
		queueLastsMillis: strconv.FormatInt(wire.QueueLasts.Milliseconds(), 10),
		nodeTimeout:      o.NodeTimeout,
		namedArg:         strconv.FormatInt(namedLasts(o.NodeTimeout).Microseconds(), 10),
	}
	if !o.DisableQuarantine {
		w.recovery = strconv.FormatInt(o.RecoveryDelay.Microseconds(), 10)
	}
	return w
}

// counterMillis returns, in milliseconds for a script, how long a fencing
// counter outlives the last acquisition of a lock with ttl (see
// counterLife).
func (w *wireArgs) counterMillis(ttl time.Duration) string {
	if ttl == w.ttl {
		return w.counterTTL
	}
	return strconv.FormatInt(counterLife(ttl, w.recoveryDelay).Milliseconds(), 10)
}

// counterLife returns how long a fencing counter outlives the last
// acquisition of a lock with ttl: ttl plus Options.RecoveryDelay, and at
// least a second. A counter that expired starts again from the clocks, a
// second behind the node's (see lua/fence.lua), above every token handed out
// before as long as no clock runs ahead of another by more than
// RecoveryDelay (assumption A5 of SAFETY.md, which the quarantine needs
// too): so nothing stays behind a lock name for longer.
func counterLife(ttl, recoveryDelay time.Duration) time.Duration {
	return max(ttl+recoveryDelay, time.Second)
}

// namedFor returns, in microseconds for a script, how long a release made
// with the per-node timeout nodeTimeout keeps the places of the clients it
// names, unless they try for the key (see namedLasts).
func (w *wireArgs) namedFor(nodeTimeout time.Duration) string {
	if nodeTimeout == w.nodeTimeout {
		return w.namedArg
	}
	return strconv.FormatInt(namedLasts(nodeTimeout).Microseconds(), 10)
}

// namedLasts returns how long the places in line of the clients a release
// names last unless they try for the key (see lua/next_waiters.lua): three
// per-node timeouts, as the second client named tries a node timeout after
// the release (see wait.Waker), and its request may take another; at
// least minNamedLasts, at most wire.QueueLasts. A client named that is
// alive tries at once and keeps its place; one that died while named
// stops holding the line that much later, not a place's whole life.
func namedLasts(nodeTimeout time.Duration) time.Duration {
	return min(max(3*nodeTimeout, minNamedLasts), wire.QueueLasts)
}

// minNamedLasts is the least time a named client's place lasts unrenewed:
// room for a woken client's scheduling and a busy machine's delays.
const minNamedLasts = 250 * time.Millisecond

// millis formats a TTL in milliseconds for a script.
func (w *wireArgs) millis(ttl time.Duration) string {
	if ttl == w.ttl {
		return w.ttlMillis
	}
	return strconv.FormatInt(ttl.Milliseconds(), 10)
}

// drift is the clock-drift allowance for ttl: ttl*factor + 2 ms.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + driftConstant
}

// fanout asks every node by req at once (nodes.Set.Fanout): a reply is
// OutcomeOK when isOK says so, and the answers are collected until
// enough(ok, others) is true, every node answered, or timeout passed.
func (c *Client) fanout(ctx context.Context, timeout time.Duration, req *nodes.Request, isOK func(any) bool, enough func(ok, others int) bool) ([]NodeResult, int) {
	rs, ok := c.nodes.Fanout(ctx, timeout, req, isOK, enough)
	return nodeResults(rs), ok
}

// trackedFanout is fanout that also returns, when some nodes were not
// heard out, the fan-out whose requests to them are still to end; lag
// holds req back on the nodes whose earlier request has not ended.
func (c *Client) trackedFanout(ctx context.Context, timeout time.Duration, req *nodes.Request, lag *nodes.Lagging, isOK func(any) bool, enough func(ok, others int) bool) ([]NodeResult, int, *nodes.Flight) {
	rs, ok, unfinished := c.nodes.TrackedFanout(ctx, timeout, req, lag, isOK, enough)
	return nodeResults(rs), ok, unfinished
}

// nodeResults returns rs as NodeResults.
func nodeResults(rs []nodes.Result) []NodeResult {
	results := make([]NodeResult, len(rs))
	for i, r := range rs {
		results[i] = nodeResult(r)
	}
	return results
}

// nodeResult returns r as a NodeResult: the outcomes share their values.
func nodeResult(r nodes.Result) NodeResult {
	return NodeResult{Node: r.Node, Outcome: Outcome(r.Outcome), Err: r.Err, Latency: r.Latency}
}

// nodeConns returns conns as the nodes package takes them.
func nodeConns(conns []Conn) []nodes.Conn {
	nc := make([]nodes.Conn, len(conns))
	for i, conn := range conns {
		nc[i] = conn
	}
	return nc
}

// unasked returns a result per node for a request that was never sent.
func (c *Client) unasked() []NodeResult {
	results := make([]NodeResult, len(c.conns))
	for i, conn := range c.conns {
		results[i].Node, results[i].Outcome = conn.Name(), OutcomeNotAsked
	}
	return results
}

// fenceOf returns the fencing token of a granted acquisition, the largest
// counter among the nodes that granted it, and how many of them are behind.
func fenceOf(results []NodeResult, replies []acquireReply) (fence uint64, behind int) {
	for i, r := range results {
		if r.Outcome == OutcomeOK {
			fence = max(fence, replies[i].fence)
		}
	}
	for i, r := range results {
		if r.Outcome == OutcomeOK && replies[i].fence < fence {
			behind++
		}
	}
	return fence, behind
}

// raiseFences is the second step of an acquisition whose granting nodes
// disagree on the fencing counter. It raises the counter to fence on every
// node that is not known to be there already: the granting nodes behind, and
// the nodes that refused or did not answer, so that the nodes agree again
// sooner, except where another holder's token holds the key (see
// raise.lua). A node counts as OK when it still holds the lock, which orders the
// raise before any later grant of the key there; the token is safe to hand
// out once a quorum is OK, since every later quorum meets this one (see the
// package documentation).
func (c *Client) raiseFences(ctx context.Context, key, token string, fence uint64, ttl time.Duration,
	granted []NodeResult, replies []acquireReply) ([]NodeResult, int) {
	keys := []string{key, c.keys.FenceKey(key)}
	value := strconv.FormatUint(fence, 10)
	counterTTL := c.wire.counterMillis(ttl)
	raise := &nodes.Request{Script: wire.RaiseScript, Keys: keys, Args: []string{token, value, counterTTL},
		Local: func(node int) (any, bool) {
			// Granted, and already there.
			return int64(1), granted[node].Outcome == OutcomeOK && replies[node].fence == fence
		}}
	results, ok := c.fanout(ctx, c.nodeTimeout(ttl), raise, nodes.IsOne, c.decided)
	for i := range results {
		if granted[i].Outcome != OutcomeOK && results[i].Outcome != OutcomeOK {
			results[i] = granted[i] // what the node said to the acquisition
		}
	}
	return results, ok
}

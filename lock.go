package redlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wire"
)

// Lock is an acquired lock. It is safe for concurrent use; it must not be
// copied. Only a Client's acquisitions make one: the zero value is not a
// lock, and its methods panic.
//
// A Lock is held until Release, or until its validity deadline (Until)
// comes within its loss margin (Options.LossMargin) without a successful
// extension, while some validity is left for the holder to stop in. It then
// counts as lost (ErrLockLost) when its holder tried to keep it, with
// WithAutoRenew or a call of Extend, and as expired (ErrLockExpired) when
// nobody did: a lock taken for one TTL and left to end by itself. Done, Err
// and Do's context signal the end of ownership, whatever its reason, by a
// local timer: they do not wait for a server to notice.
type Lock struct {
	client *Client
	key    string
	token  string
	ttl    time.Duration
	// delay is the lock-delay (WithLockDelay): each extension keeps the
	// key on the nodes this much longer than its TTL. Set once before the
	// lock is handed out.
	delay time.Duration
	fence uint64       // fencing token, set once before the lock is handed out
	nodes []NodeResult // the answers that granted it; set with fence
	// nodesBuf backs nodes while they fit.
	nodesBuf [nodes.InlineNodes]NodeResult
	// Nodes whose acquire request was still under way when the lock was
	// handed out; set once before that, nil when none lagged.
	lagging *nodes.Lagging
	// holding numbers the lock among those of its key acquired here, for
	// the goroutine of this client whose turn to try for the key started
	// while the lock was held (wait.Turns); set once before the lock is
	// handed out, 0 for TryAcquire.
	holding uint64
	// queuedSince is when the acquisition that won the lock began waiting
	// in the key's queue of waiting clients on the nodes, as it sent it
	// (see queuePlace.since), or "" when it never queued: the release
	// takes this client's entry, queuedAs (its id, or its readers' entry
	// for a reader), out of the queue only while the entry is still that
	// acquisition's (lua/leave_queue.lua), also on the nodes that refused
	// the acquisition. Both set once before the lock is handed out.
	queuedSince, queuedAs string
	// exclusive: a writer's lock, not a reader's; its renewal reclaims
	// the nodes that refused it (see reclaim). Set once before the lock
	// is handed out.
	exclusive bool
	// granted is when the acquisition granted the lock, for its telemetry
	// (telemetry.go); set once before the lock is handed out. Nil without
	// telemetry, and for a lock rebuilt from a token (tokenLock). Set
	// under mu, which endLocked holds; the others read it once the lock
	// is handed out. A pointer, so that a Lock without telemetry stays in
	// its allocation size class.
	granted *time.Time

	releasing sync.Mutex // serialises Release calls
	// extending serialises extensions, Extend's and the renewal's: the
	// deadline and TTL they leave are those of the last sent, which may
	// differ in TTL.
	extending sync.Mutex
	mu        sync.Mutex
	until     time.Time // validity deadline, with a monotonic clock reading
	// lastTTL is the TTL of the grant or of the last extension, which the
	// renewal keeps and paces itself by; margin, the lock's loss margin,
	// is that TTL's: the lock ends this long before until.
	lastTTL, margin time.Duration
	extensions      int
	// keep is set once the holder asked to keep the lock: WithAutoRenew, or
	// a call of Extend before its end. A lock that ends at its deadline is
	// lost with it, expired without it.
	keep bool
	err  error // why the lock is no longer held; nil while held
	// refused is the last extension that failed without finding the lock
	// gone, nil once one succeeds: a lock lost at its deadline reports
	// each node's answer to it.
	refused  *QuorumError
	released bool
	// releaseSent: a Release was made, which a later one repeats even
	// once the lock ended, where a first one keeps its lock-delay.
	releaseSent bool
	// handedOff: its release carried the attempt of a goroutine of this
	// client waiting for a permit (see permitHandoff), which the permit
	// goes to unless the nodes refuse it; handedOffAt is when.
	handedOff   bool
	handedOffAt time.Time
	// Set up on first use of Done or Context, or at once with auto-renewal.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	renewal chan struct{} // closed to stop the renewal goroutine
	// extended tells the renewal goroutine of an extension by Extend,
	// after which it paces itself by the new TTL.
	extended chan struct{}
}

// newLock returns the Lock of a grant. With autoRenew, the caller starts
// its renewal (startRenewal) once it has set every field, which the
// renewal reads.
func newLock(c *Client, key, token string, ttl, delay time.Duration, until time.Time, autoRenew bool) *Lock {
	return &Lock{client: c, key: key, token: token, ttl: ttl, delay: delay, until: until,
		lastTTL: ttl, margin: c.opts.lossMargin(ttl), keep: autoRenew}
}

// startRenewal arms the lost-lock signal and starts renewing the lock in
// the background (renew), unless it has ended already.
func (l *Lock) startRenewal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watchLocked()
	if l.err != nil {
		return
	}
	l.renewal, l.extended = make(chan struct{}), make(chan struct{}, 1)
	go l.renew(l.renewal, l.extended)
}

// Nodes returns each node's answer to the acquisition that granted the
// lock, in the client's node order: OutcomeOK where the node holds it for
// this lock, and why not elsewhere. A node that had not answered when a
// quorum had granted shows OutcomeNoAnswer; its request may still have set
// the key there, and Release deletes it there too. The slice is the
// caller's.
func (l *Lock) Nodes() []NodeResult { return slices.Clone(l.nodes) }

// Key returns the name of the key the lock holds, without Options.KeyPrefix:
// the name given to Acquire, or for a permit of a semaphore (WithLimit), the
// permit's, name:permit:i. A fencing token (Fence) counts per key.
func (l *Lock) Key() string { return strings.TrimPrefix(l.key, l.client.opts.KeyPrefix) }

// Token returns the value that identifies this acquisition on the nodes:
// <random>.<granted µs>.<owner>.<ttl ms>[+<lock-delay ms>]: 160 random
// bits in URL-safe base64, when the acquisition began by the holder's
// clock, its owner (WithOwner), the TTL the lock was acquired with, which
// ExtendToken uses when given none, and its lock-delay when it has one
// (WithLockDelay). TokenGrant reads them back.
func (l *Lock) Token() string { return l.token }

// Until returns the validity deadline: the lock is held, at the latest, until
// then, unless it is extended. It is computed from the monotonic clock as
// start + TTL - drift allowance, so it errs on the early side.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Err returns nil while the lock is held, ErrReleased after Release, an
// error wrapping ErrLockLost once the lock was lost (even if released
// later): its holder asked to keep it (WithAutoRenew, Do, a call of
// Extend), and its validity came within the loss margin, or an extension
// found a majority no longer holding it; and an error wrapping
// ErrLockExpired once a lock nobody asked to keep came within the loss
// margin of its deadline. A loss is a *QuorumError with each node's
// answer (errors.As) when an extension found a majority no longer holding
// the lock, or when the last extension before the deadline failed: the
// answers are that extension's. It does no I/O.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkDeadlineLocked()
	return l.err
}

// Done returns a channel that is closed when the lock stops being held:
// released, lost, or expired, at the latest when its validity comes within
// the loss margin (Options.LossMargin) of its deadline. Err then says why.
func (l *Lock) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watchLocked()
	return l.ctx.Done()
}

// context returns a copy of parent that is cancelled, with Err as its cause
// (see context.Cause), when the lock is released, lost or expired. The
// caller must call the returned cancel function when done with it.
func (l *Lock) context(parent context.Context) (context.Context, context.CancelFunc) {
	l.mu.Lock()
	l.watchLocked()
	owner := l.ctx
	l.mu.Unlock()
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(owner, func() { cancel(context.Cause(owner)) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}

// Extend resets the lock's time-to-live to ttl (the acquisition TTL when ttl
// is 0) on every node that still holds it, and moves the validity deadline to
// start + ttl - drift if a quorum did so in time. It blocks for at most the
// per-node timeout (twice while a renewal is under way, which it waits
// for). It returns once a quorum extended the lock, or once no quorum can
// and the nodes still to answer cannot make the lock lost.
//
// ttl may be shorter or longer than the acquisition TTL: from then on the
// loss margin (Options.LossMargin) is that of ttl, and a lock renewed
// (WithAutoRenew, Do, an election) is renewed for ttl, every third of it.
//
// A call marks the lock as one its holder keeps: from then on, reaching
// the deadline loses it (ErrLockLost) instead of expiring it.
//
// Errors: ErrNotExtended (the lock stays valid until Until) with each node's
// outcome; ErrLockLost when the deadline passed or too many nodes no longer
// hold the lock, after which the lock is lost for good; ErrLockExpired when
// the lock, never extended before, had expired before this call;
// ErrReleased; ErrExtendLimit.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	return l.extend(ctx, ttl, false)
}

// extend is Extend; renewing marks the extensions of auto-renewal.
func (l *Lock) extend(ctx context.Context, ttl time.Duration, renewing bool) error {
	l.markKept()
	if err := l.client.checkCall(ctx); err != nil {
		return err
	}
	c := l.client
	if ttl == 0 {
		ttl = l.ttl
	}
	if err := c.checkLockTTL(ttl); err != nil {
		return err
	}
	if err := c.checkLockDelay(l.delay, ttl); err != nil {
		return err
	}
	ttl = ttl.Truncate(time.Millisecond)
	heardOut := renewing && l.exclusive && len(c.conns) > 1
	var refused []int
	var err error
	l.extending.Lock()
	if c.tel == nil {
		refused, err = l.extendBy(ctx, ttl, nil, heardOut)
	} else {
		var call *telemetry.Call
		ctx, call = c.tel.StartExtend(ctx, l.key, ttl, l.extendKind(renewing))
		refused, err = l.extendBy(ctx, ttl, call, heardOut)
		call.EndExtend(extendResult(err), err)
	}
	l.extending.Unlock()
	if err == nil && len(refused) > 0 {
		l.reclaim(ttl, refused)
	}
	if err == nil && !renewing {
		l.tellRenewal()
	}
	return err
}

// tellRenewal tells the renewal goroutine, if any, of an extension by
// Extend, which it then paces itself by.
func (l *Lock) tellRenewal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.extended <- struct{}{}:
	default: // told already; a nil channel: no renewal
	}
}

// ttlNow returns the TTL of the grant or of the last extension.
func (l *Lock) ttlNow() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastTTL
}

// markKept records that the holder wants to keep the lock, unless it has
// ended already: a lock that expired before the first call of Extend stays
// expired.
func (l *Lock) markKept() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkDeadlineLocked()
	l.keep = true
}

// extendBy extends the lock by ttl, a valid TTL; call, when not nil,
// observes it (telemetry.go). With heardOut, it waits for every node's
// answer once a quorum extended, up to the node timeout, and returns the
// nodes that answered without extending it: their key is another's, or
// gone (see reclaim).
func (l *Lock) extendBy(ctx context.Context, ttl time.Duration, call *telemetry.Call, heardOut bool) (refused []int, err error) {
	if err := l.extendable(); err != nil {
		return nil, err
	}
	c := l.client
	if ctx.Err() != nil {
		// Nothing is asked: the lock stays as it is, valid until Until.
		return nil, &QuorumError{Op: "extend", Key: l.key, Quorum: c.quorum, Nodes: c.unasked(), Err: ErrNotExtended, Cause: ctxEnded(ctx)}
	}
	extend := &nodes.Request{Script: wire.ExtendScript, Keys: []string{l.key, c.keys.FenceKey(l.key)},
		Args: []string{l.token, c.wire.millis(ttl + l.delay), c.wire.counterMillis(ttl + l.delay)}}
	start := time.Now()
	isOK, enough := c.extendDecided()
	if heardOut {
		enough = c.everyAnswer(enough)
	}
	results, ok, unfinished := c.trackedFanout(ctx, c.nodeTimeout(ttl), extend, l.lagging, isOK, enough)
	if ok >= c.quorum {
		unfinished.Keep() // as an acquisition keeps what it won (see conclude)
	}
	c.observeNodes(ctx, call, telemetry.OpExtend, results)
	var forced error
	if goneOnMajority(results, c.quorum) {
		forced = c.forcedFree(ctx, l.key, l.token, ttl)
	}
	until := start.Add(ttl - drift(ttl, c.opts.DriftFactor))
	validity := time.Until(until)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	if l.releaseSent {
		// Released meanwhile: what the extension found, the keys gone,
		// is the release's doing, not a loss.
		return nil, fmt.Errorf("%w: %s", ErrReleased, quoteKey(l.key))
	}
	if ok >= c.quorum && validity > 0 {
		l.until, l.lastTTL, l.margin = until, ttl, c.opts.lossMargin(ttl)
		l.extensions++
		l.refused = nil
		if l.timer != nil {
			l.timer.Reset(validity - l.margin)
		}
		if heardOut {
			refused = nodesWith(results, OutcomeHeld)
		}
		return refused, nil
	}
	qe := &QuorumError{Op: "extend", Key: l.key, OK: ok, Quorum: c.quorum, Validity: validity, Nodes: results, Err: ErrNotExtended}
	if qe.Cause = ctxEnded(ctx); qe.Cause == nil {
		qe.failFast() // a key of another type, an ACL: no retry fixes it
	}
	l.extendFailedLocked(qe, forced)
	return nil, qe
}

// extendDecided returns the isOK and enough functions of an extension's
// fan-out. It ends at a quorum of extensions, or once no quorum can extend
// and the nodes still to answer cannot change what failed: the lock is
// gone from a majority, or cannot be. Until then a failure waits for them,
// so that an expired lock is told as lost, not as a lack of answers, when
// a node down leaves the refusals one short of a majority.
func (c *Client) extendDecided() (isOK func(any) bool, enough func(ok, others int) bool) {
	var gone atomic.Int32 // nodes that no longer hold the token; isOK may run after enough's last call
	isOK = func(v any) bool {
		if nodes.IsOne(v) {
			return true
		}
		gone.Add(1)
		return false
	}
	n, quorum := len(c.conns), c.quorum
	enough = func(ok, others int) bool {
		left, gone := n-ok-others, int(gone.Load())
		return ok >= quorum || gone > n-quorum || ok+left < quorum && gone+left <= n-quorum
	}
	return isOK, enough
}

// extendable returns why the lock cannot be extended: it ended, or reached
// Options.MaxExtensions; nil when it can.
func (l *Lock) extendable() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkDeadlineLocked()
	if l.err == ErrReleased {
		return fmt.Errorf("%w: %s", ErrReleased, quoteKey(l.key))
	}
	if l.err != nil {
		return l.err
	}
	if limit := l.client.opts.MaxExtensions; limit > 0 && l.extensions >= limit {
		return fmt.Errorf("%w: %d extensions of %s", ErrExtendLimit, l.extensions, quoteKey(l.key))
	}
	return nil
}

// extendFailedLocked declares the lock lost when a majority of nodes no
// longer hold its token, after the failed extension qe: taken over by an
// operator when forced is not nil (see Client.forcedFree).
func (l *Lock) extendFailedLocked(qe *QuorumError, forced error) {
	if goneOnMajority(qe.Nodes, qe.Quorum) {
		// A majority no longer holds our token: the lock is gone.
		qe.Err = ErrLockLost
		if forced != nil {
			qe.Err = forced
		}
		l.endLocked(qe)
	} else {
		l.refused = qe
		l.checkDeadlineLocked()
	}
}

// releaser returns the request of a release that is not announced: the
// release of a failed attempt, or one that carries the next attempt.
func releaser(key, token string) *nodes.Request {
	r := &releaseRequest{keys: [4]string{key}, args: [7]string{token}}
	r.Request = nodes.Request{Script: wire.ReleaseScript, Keys: r.keys[:1], Args: r.args[:2]}
	return &r.Request
}

// announcedReleaser returns the request of a release published on the
// key's release channel (layout.releaseChannel), naming the first clients in
// the key's queue (see wire.QueueKeys). It takes client id out of the
// queue while the entry is the one made by the acquisition that began
// waiting at since (see Lock.queuedSince); with since "", it leaves the
// queue alone. The places of the clients it names last named microseconds
// unless they try for the key (see namedLasts).
func announcedReleaser(key, token, id, since, named string, keys wire.Layout) *nodes.Request {
	r := &releaseRequest{keys: [4]string{key}, args: [7]string{token}}
	channel, clock, queue, deadlines, waiting := wire.ReleaseStrings(key, time.Now(), keys.Tag(key))
	r.keys[1], r.keys[2], r.keys[3] = queue, deadlines, waiting
	r.args[1], r.args[2], r.args[3], r.args[4], r.args[6] = channel, clock, id, since, named
	r.Request = nodes.Request{Script: wire.ReleaseScript, Keys: r.keys[:], Args: r.args[:], LeavesQueue: since != ""}
	return &r.Request
}

// handingOffReleaser is announcedReleaser for a release that carries the
// attempt of this client's next goroutine waiting for the key (see
// handoff): it announces only to the clients that the key's queue names,
// who may be ahead of that attempt in line, and not on the key's channel.
func handingOffReleaser(key, token, id, since, named string, keys wire.Layout) *nodes.Request {
	req := announcedReleaser(key, token, id, since, named, keys)
	req.Args[5] = "1"
	return req
}

// releaseRequest is a release's request with its keys and arguments in one
// allocation.
type releaseRequest struct {
	nodes.Request
	keys [4]string
	args [7]string
}

// watchLocked arms the lost-lock signal: a context cancelled on release, loss,
// or when the validity deadline passes.
func (l *Lock) watchLocked() {
	if l.ctx != nil {
		return
	}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	l.checkDeadlineLocked()
	if l.err != nil {
		l.cancel(l.err)
		return
	}
	l.timer = time.AfterFunc(time.Until(l.until)-l.margin, l.onDeadline)
}

func (l *Lock) onDeadline() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		if left := time.Until(l.until) - l.margin; left > 0 {
			l.timer.Reset(left) // an extension raced with the timer
			return
		}
	}
	l.checkDeadlineLocked()
}

// checkDeadlineLocked ends the lock once less than its loss margin of
// validity is left (see Options.LossMargin): lost when its holder tried to
// keep it, expired when nobody did.
func (l *Lock) checkDeadlineLocked() {
	if l.err != nil {
		return
	}
	left := time.Until(l.until)
	if left > l.margin {
		return
	}
	verdict, why := ErrLockExpired, "neither renewed nor extended"
	var limit error // the cause of a loss at Options.MaxExtensions
	if l.keep {
		verdict, why = ErrLockLost, "without an extension"
		if l.client.closing() {
			why, limit = "as its Client was closed", ErrClosed
		} else if max := l.client.opts.MaxExtensions; max > 0 && l.extensions >= max {
			why, limit = fmt.Sprintf("after its last extension (Options.MaxExtensions, %d)", max), ErrExtendLimit
		}
	}
	var err error
	if left <= 0 {
		err = fmt.Errorf("%w: %s: validity ended %s ago, %s",
			verdict, quoteKey(l.key), (-left).Round(time.Microsecond), why)
	} else {
		err = fmt.Errorf("%w: %s: %s of validity left, within the %s loss margin, %s",
			verdict, quoteKey(l.key), left.Round(time.Microsecond), l.margin, why)
	}
	if limit != nil {
		err = fmt.Errorf("%w (%w)", err, limit)
	} else if l.keep && l.refused != nil {
		err = l.lostAfter(err)
	}
	l.endLocked(err)
}

// lostAfter returns err, a loss at the deadline, as a *QuorumError with
// each node's answer to the last extension that failed; it wraps err, and
// not ErrNotExtended, as the lock is not valid any more.
func (l *Lock) lostAfter(err error) error {
	qe := *l.refused
	qe.Nodes = slices.Clone(qe.Nodes)
	qe.Err, qe.Cause = err, nil
	return &qe
}

// endLocked records why the lock ended and fires the signals, once: a lock
// lost or expired before its release keeps reporting it.
func (l *Lock) endLocked(err error) {
	if l.err != nil {
		return
	}
	l.err = err
	if l.granted != nil {
		l.observeEnd(err)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.cancel != nil {
		l.cancel(err)
	}
	l.stopRenewalLocked()
}

// stopRenewal stops the lock's automatic renewal, if any: it stays held
// until its deadline, unless released or extended.
func (l *Lock) stopRenewal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopRenewalLocked()
}

// stopRenewalLocked stops the lock's automatic renewal, if any.
func (l *Lock) stopRenewalLocked() {
	if l.renewal != nil {
		close(l.renewal)
		l.renewal = nil
	}
}

// Fence returns the lock's fencing token: a number strictly greater than the
// token of every lock of the same key that any client of this library was
// handed before this acquisition started. A protected resource that keeps
// the highest token it has seen and refuses requests carrying a lower one is
// safe from a holder that paused, or whose request was delayed, past the end
// of its validity; the holder itself sends its token as often as it needs
// (see package fence, and the package documentation for the argument and its
// assumptions). Tokens of different
// keys are unrelated; they are not timestamps. A permit of a semaphore
// (WithLimit) counts on its own key (Lock.Key). The readers (WithShared) and
// writers of one key share its counter: a resource refuses a reader whose
// token is below a write's, and a writer whose token is below any write's
// or reader's it served (fence.Store.ReadShared).
func (l *Lock) Fence() uint64 { return l.fence }

// lossMargin returns the loss margin of a lock with ttl (see
// Options.LossMargin).
func (o Options) lossMargin(ttl time.Duration) time.Duration {
	switch {
	case o.LossMargin < 0:
		return 0
	case o.LossMargin > 0:
		return min(o.LossMargin, ttl/2)
	default:
		return min(max(ttl/lossMarginDivisor, minLossMargin), ttl/maxLossMarginDivisor)
	}
}

// ExtendToken extends the lock named key that was acquired with token,
// without the *Lock of that acquisition: for a lock taken by another process,
// such as a shell script that ran `redlock acquire` and later
// `redlock extend`. It resets the lock's time-to-live to ttl on every node
// that still holds token (when ttl is 0: the TTL the lock was acquired
// with, which a token of this library carries, else Options.TTL), keeping
// the key there the lock-delay longer when the token says the lock was
// acquired with one (WithLockDelay), and returns the new
// validity deadline, start + ttl - drift allowance, when a quorum did so in
// time. It blocks for at most the per-node timeout.
//
// A ttl shorter than the time the lock had left shortens it. A *Lock of
// the same acquisition, in another process or this one, does not learn of
// it and keeps its own deadline: another client may then take the lock
// while that Lock still counts it held. Extend a lock by token only where
// nothing else holds it as a *Lock (a shell script's `redlock acquire`), or
// for no less time than it has left.
//
// The validity the lock had before the call is unknown here, so a failure
// says nothing reassuring about it. Errors: ErrLockLost (with each node's
// outcome in a *QuorumError) when too many nodes no longer hold token: the
// lock expired (also one kept only by its lock-delay now) or was taken
// over, and whoever held it must stop;
// ErrNotExtended when too few nodes answered in time: the lock may still be
// held, until a deadline this call cannot know; ErrInvalidKey, ErrInvalidTTL,
// ErrInvalidToken (an empty token).
func (c *Client) ExtendToken(ctx context.Context, key, token string, ttl time.Duration) (time.Time, error) {
	info, ours := wire.ParseToken(token)
	if ttl == 0 {
		ttl = c.opts.TTL
		if ours {
			ttl = info.TTL
		}
	}
	l, err := c.tokenLock(key, token, ttl)
	if err != nil {
		return time.Time{}, err
	}
	l.delay = info.Delay
	if err := l.Extend(ctx, ttl); err != nil {
		return time.Time{}, err
	}
	return l.Until(), nil
}

// ReleaseToken releases the lock named key that was acquired with token,
// without the *Lock of that acquisition. It deletes the key on every node
// where it still holds token, never another holder's, and behaves as
// Lock.Release does: it runs even when ctx has ended, and returns once a
// quorum answered; its errors are Release's: ErrNotHeld when no node that
// answered held token (the lock had expired: harmless, but its holder
// overran it; a lock with a lock-delay whose TTL ran out is not deleted,
// a reader's not taken out of the readers, and the delay stands); ErrNotReleased when fewer than a quorum answered in time (the
// lock may stand until its TTL passes), with ErrInvalidOptions when so many
// nodes refused for a reason no retry fixes (the key holds another type
// of data, an ACL) that no quorum can; ErrInvalidKey; ErrInvalidToken (an
// empty token). A permit of a semaphore is a lock of its own key, the
// permit's Lock.Key, not the semaphore's name: released under that name,
// its token is found nowhere (ErrNotHeld) and the permit stays held until
// its TTL passes. The Lock of the same acquisition, released right after,
// may still find its token on a node this release had not reached yet, and
// then returns nil rather than ErrNotHeld.
func (c *Client) ReleaseToken(ctx context.Context, key, token string) error {
	l, err := c.tokenLock(key, token, c.opts.TTL)
	if err != nil {
		return err
	}
	return l.Release(ctx)
}

// tokenLock rebuilds a Lock from a key name and a token so that Extend and
// Release run their usual code paths. Its validity is unknown; it is given a
// deadline one TTL away only so that Extend's check of a lapsed deadline
// passes, and the Lock never leaves this file: Extend replaces the deadline
// by a measured one on success, and a failed Release waits for its
// background tries up to it at most, a TTL: as long as the key may stand.
func (c *Client) tokenLock(name, token string, ttl time.Duration) (*Lock, error) {
	if token == "" {
		return nil, fmt.Errorf("%w: the token is empty", ErrInvalidToken)
	}
	key, err := c.lockKey(name)
	if err != nil {
		return nil, err
	}
	if err := checkTTL(ttl, c.opts.DriftFactor); err != nil {
		return nil, err
	}
	ttl = ttl.Truncate(time.Millisecond)
	return newLock(c, key, token, ttl, 0, time.Now().Add(ttl), false), nil
}

// wasHandedOff reports whether the lock's release carried the attempt of
// a goroutine of this client waiting for a permit, less than a TTL ago:
// a grant of that attempt that nobody collected has expired since, on
// every node, so that the permit is no longer on its way here.
func (l *Lock) wasHandedOff() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.handedOff && time.Since(l.handedOffAt) < l.ttl
}

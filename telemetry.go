package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wire"
)

// This file connects the library to its telemetry (internal/telemetry):
// it translates node results and errors into what the telemetry records.
// A Client without Options.Logger, MeterProvider and TracerProvider has a
// nil Client.tel, and every hook returns at its first branch.

// newTelemetry returns the telemetry of c, nil when o, as the user gave it,
// has neither logger nor provider.
func (c *Client) newTelemetry(o Options) *telemetry.Telemetry {
	names := make([]string, len(c.conns))
	for i, conn := range c.conns {
		names[i] = conn.Name()
	}
	return telemetry.New(telemetry.Config{Logger: o.Logger, MeterProvider: o.MeterProvider, TracerProvider: o.TracerProvider,
		Nodes: names, NodeTimeout: c.requestTimeout, Client: c.id})
}

// telemetryOutcomes maps each Outcome to the telemetry's.
var telemetryOutcomes = [...]telemetry.Outcome{
	OutcomeNoAnswer:   telemetry.NoAnswer,
	OutcomeOK:         telemetry.OK,
	OutcomeHeld:       telemetry.Held,
	OutcomeTimeout:    telemetry.Timeout,
	OutcomeError:      telemetry.Error,
	OutcomeRecovering: telemetry.Recovering,
	OutcomeNotAsked:   telemetry.NotAsked,
}

// answerOf returns a node's result as the telemetry records it.
func answerOf(r NodeResult) telemetry.Answer {
	return telemetry.Answer{Node: r.Node, Outcome: telemetryOutcomes[r.Outcome], Err: r.Err, Latency: r.Latency, RecoveringLeft: r.RecoveringLeft}
}

// answersOf returns the results of a request as the telemetry records them.
func answersOf(results []NodeResult) []telemetry.Answer {
	answers := make([]telemetry.Answer, len(results))
	for i, r := range results {
		answers[i] = answerOf(r)
	}
	return answers
}

// observeNodes records each node's answer to a request of op, and, when
// call is not nil, gives them to the call's span.
func (c *Client) observeNodes(ctx context.Context, call *telemetry.Call, op telemetry.Op, results []NodeResult) {
	if c.tel == nil {
		return
	}
	for i, r := range results {
		c.tel.Node(ctx, i, op, answerOf(r))
	}
	if call != nil && call.Traced() {
		call.Nodes(answersOf(results))
	}
}

// observeSent records each node's answer to op as observeNodes does, for
// the nodes that were sent the request: those that local answered for
// without asking them are left out.
func (c *Client) observeSent(ctx context.Context, op telemetry.Op, results []NodeResult, local func(int) (any, bool)) {
	if c.tel == nil {
		return
	}
	for i, r := range results {
		if _, answered := local(i); !answered {
			c.tel.Node(ctx, i, op, answerOf(r))
		}
	}
}

// endAcquire ends the observation of an acquisition.
func endAcquire(call *telemetry.Call, lock *Lock, err error) {
	var nodes []NodeResult
	var fence uint64
	if lock != nil {
		nodes, fence = lock.nodes, lock.fence
	} else if qe := (*QuorumError)(nil); errors.As(err, &qe) {
		nodes = qe.Nodes
	}
	var answers []telemetry.Answer
	if call.Traced() {
		answers = answersOf(nodes)
	}
	call.EndAcquire(acquireResult(lock, err), fence, answers, err)
}

// noteAttempt records one attempt of an acquisition, which granted lock or
// failed with err, classified by failFast first: an attempt that no retry
// fixes is recorded as such, not as one more wait.
func noteAttempt(call *telemetry.Call, lock *Lock, err error) {
	if call == nil {
		return
	}
	if lock != nil {
		call.Attempt(telemetry.Acquired, countOK(lock.nodes))
		return
	}
	failFast(err)
	ok := 0
	if qe := (*QuorumError)(nil); errors.As(err, &qe) {
		ok = qe.OK
	}
	call.Attempt(acquireResult(nil, err), ok)
}

// acquireResult says why an acquisition ended as it did: the nodes'
// refusals of its last attempt decide, by the most common reason among
// them, unless the caller cancelled or a reason no retry fixes stopped it.
func acquireResult(lock *Lock, err error) telemetry.AcquireResult {
	var qe *QuorumError
	switch {
	case lock != nil:
		return telemetry.Acquired
	case !errors.As(err, &qe):
		return telemetry.Unavailable
	case errors.Is(qe.Cause, ErrInvalidOptions):
		return telemetry.Misconfigured
	case errors.Is(qe.Cause, context.Canceled):
		return telemetry.Cancelled
	}
	n := map[Outcome]int{}
	for _, r := range qe.Nodes {
		n[r.Outcome]++
	}
	held, recovering, failed := n[OutcomeHeld], n[OutcomeRecovering], n[OutcomeTimeout]+n[OutcomeError]
	switch {
	case held+recovering+failed == 0 && qe.Cause != nil:
		return telemetry.Cancelled // queued, or cut short, until the context ended
	case held > 0 && held >= recovering && held >= failed:
		return telemetry.Conflict
	case recovering > 0 && recovering >= failed:
		return telemetry.NodesRecovering
	default:
		return telemetry.Unavailable
	}
}

// countOK counts the nodes that answered OutcomeOK.
func countOK(results []NodeResult) int {
	ok := 0
	for _, r := range results {
		if r.Outcome == OutcomeOK {
			ok++
		}
	}
	return ok
}

// extendKind is the kind of an extension of l.
func (l *Lock) extendKind(renewing bool) telemetry.Kind {
	switch {
	case renewing:
		return telemetry.KindRenew
	case l.granted == nil:
		return telemetry.KindExtendToken // see tokenLock
	default:
		return telemetry.KindExtend
	}
}

// extendResult says how an extension ended.
func extendResult(err error) telemetry.ExtendResult {
	switch {
	case err == nil:
		return telemetry.Extended
	case errors.Is(err, ErrLockLost):
		return telemetry.Lost
	case errors.Is(err, ErrLockExpired):
		return telemetry.Expired
	case errors.Is(err, ErrReleased):
		return telemetry.WasReleased
	case errors.Is(err, ErrExtendLimit):
		return telemetry.LimitReached
	default:
		return telemetry.NotExtended
	}
}

// observeRelease is Release, observed.
func (c *Client) observeRelease(ctx context.Context, l *Lock) error {
	kind := telemetry.KindRelease
	if l.granted == nil {
		kind = telemetry.KindReleaseToken // see tokenLock
	}
	ctx, call := c.tel.StartRelease(ctx, l.key, l.ttl, kind)
	err := l.releaseCall(ctx, call)
	var r telemetry.ReleaseResult
	var failed []telemetry.Answer // for the log of a release without a quorum
	switch {
	case err == nil:
		r = telemetry.Released
	case errors.Is(err, ErrNotHeld):
		r = telemetry.NotHeld
	case errors.Is(err, ErrReleased):
		r = telemetry.AlreadyReleased
	default:
		r = telemetry.NotReleased
		if qe := (*QuorumError)(nil); errors.As(err, &qe) {
			failed = answersOf(qe.Nodes)
		}
	}
	call.EndRelease(l.key, r, failed, err)
	return err
}

// observeGrant starts the observation of a lock that an acquisition
// granted: the clock of its hold time, and a watch of its deadline, so
// that a loss is reported when it happens even when nobody asks the lock.
func (l *Lock) observeGrant(ctx context.Context) {
	now := time.Now()
	l.mu.Lock() // the renewal goroutine may have started
	l.granted = &now
	l.watchLocked()
	l.mu.Unlock()
	l.client.tel.LockGranted(ctx)
}

// observeEnd records the end of an observed lock, released, lost or
// expired with err. It runs under l.mu. The lock was held until its
// validity deadline at the latest: a holder whose process was paused past
// it learns of the end only when it runs again.
func (l *Lock) observeEnd(err error) {
	heldFor := time.Since(*l.granted)
	if until := l.until.Sub(*l.granted); heldFor > until {
		heldFor = max(until, 0)
	}
	switch {
	case errors.Is(err, ErrReleased):
		l.client.tel.LockEnded(l.key, heldFor, telemetry.EndReleased, 0, nil)
		return
	case errors.Is(err, ErrLockExpired):
		l.client.tel.LockEnded(l.key, heldFor, telemetry.EndExpired, 0, err)
		return
	}
	reason := telemetry.DeadlinePassed
	limit := l.client.opts.MaxExtensions
	if errors.Is(err, ErrTakenOver) {
		reason = telemetry.ForcedFree
	} else if qe := (*QuorumError)(nil); errors.As(err, &qe) && goneOnMajority(qe.Nodes, qe.Quorum) {
		// Not a loss at the deadline, which carries the answers to the
		// last failed extension: nodes that did not answer took nothing.
		reason = telemetry.TakenOver
	} else if l.renewal != nil && (limit == 0 || l.extensions < limit) {
		reason = telemetry.RenewalFailed
	}
	l.client.tel.LockEnded(l.key, heldFor, telemetry.EndLost, reason, err)
}

// observeBackgroundRelease reports the end of a release sent again in the
// background: finished after tries, or given up with missed nodes left.
func (c *Client) observeBackgroundRelease(key string, tries int, missed []bool) {
	if c.tel == nil {
		return
	}
	var left []string
	for i, m := range missed {
		if m {
			left = append(left, c.conns[i].Name())
		}
	}
	c.tel.BackgroundRelease(key, tries, left)
}

// lateFailure records a node's request that failed after its call returned
// without it (see nodes.Set.OnLateFailure), which the call recorded as
// not waited for: a node that never answers, while the others decide every
// call, shows in the metrics and the log as failing. Requests of other
// kinds than the ops recorded per node are left out.
func (c *Client) lateFailure(node int, script *wire.Script, err error, took time.Duration) {
	op, ok := lateOps[script]
	if !ok {
		return
	}
	outcome := telemetry.Error
	if nodes.IsTimeout(err) {
		outcome = telemetry.Timeout
	}
	c.tel.Node(context.Background(), node, op, telemetry.Answer{Node: c.conns[node].Name(), Outcome: outcome, Err: err, Latency: took})
}

// lateOps are the ops of the scripts whose late failures lateFailure
// records.
var lateOps = map[*wire.Script]telemetry.Op{
	wire.AcquireScript: telemetry.OpAcquire, wire.QueuedAcquireScript: telemetry.OpAcquire, wire.AcquireSharedScript: telemetry.OpAcquire,
	wire.ExtendScript: telemetry.OpExtend, wire.ReleaseScript: telemetry.OpRelease, wire.InspectScript: telemetry.OpInspect,
	wire.MarkReadyScript: telemetry.OpMarkReady,
}

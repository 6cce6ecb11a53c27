package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The span names.
const (
	SpanAcquire = "redlock.acquire" // Acquire, TryAcquire
	SpanExtend  = "redlock.extend"  // Extend, ExtendToken
	SpanRelease = "redlock.release" // Release, ReleaseToken
)

// The span event names.
const (
	EventAttempt = "redlock.attempt" // one acquisition attempt of a call
	EventNode    = "redlock.node"    // one node's answer to the deciding request
)

// The attribute keys of spans and their events, beside those of the
// metrics (AttrCall, AttrOutcome, AttrNode). A span, unlike a metric, may
// carry the lock's key.
const (
	AttrKey            = attribute.Key("redlock.key")
	AttrTTL            = attribute.Key("redlock.ttl_ms")
	AttrFence          = attribute.Key("redlock.fence")
	AttrAttempts       = attribute.Key("redlock.attempts")
	AttrAttempt        = attribute.Key("redlock.attempt")
	AttrNodesOK        = attribute.Key("redlock.nodes_ok")
	AttrLatency        = attribute.Key("redlock.latency_ms")
	AttrError          = attribute.Key("redlock.error")
	AttrRecoveringLeft = attribute.Key("redlock.recovering_left_ms")
)

// Call is one observed API call: its span when traced, the start of its
// clock, and what the span's events are made of. Its methods are called by
// the goroutine that made the call.
type Call struct {
	t     *Telemetry
	ctx   context.Context // the call's, holding its span
	kind  Kind
	span  trace.Span // nil when not traced
	start time.Time  // for the calls whose duration is measured
	// attempts counts the acquisition attempts made.
	attempts int
	// answers are the nodes' answers to the request that decided the call.
	answers []Answer
}

// start begins observing a call; the returned context holds its span, a
// child of ctx's, when traced.
func (t *Telemetry) start(ctx context.Context, kind Kind, name, key string, ttl time.Duration, traced bool) (context.Context, *Call) {
	c := &Call{t: t, kind: kind}
	if t.tracer != nil && traced {
		ctx, c.span = t.tracer.Start(ctx, name, trace.WithAttributes(
			AttrKey.String(key), AttrCall.String(kind.String()), AttrTTL.Int64(ttl.Milliseconds())))
	}
	c.ctx = ctx
	return ctx, c
}

// StartAcquire begins observing an Acquire (a TryAcquire with try) of key.
func (t *Telemetry) StartAcquire(ctx context.Context, key string, ttl time.Duration, try bool) (context.Context, *Call) {
	kind := KindAcquire
	if try {
		kind = KindTryAcquire
	}
	ctx, c := t.start(ctx, kind, SpanAcquire, key, ttl, true)
	c.start = time.Now()
	return ctx, c
}

// StartExtend begins observing an extension of key to ttl. Background
// renewals (KindRenew) are measured, not traced: they would each start a
// trace of their own.
func (t *Telemetry) StartExtend(ctx context.Context, key string, ttl time.Duration, kind Kind) (context.Context, *Call) {
	return t.start(ctx, kind, SpanExtend, key, ttl, kind != KindRenew)
}

// StartRelease begins observing a release of key, acquired with ttl.
func (t *Telemetry) StartRelease(ctx context.Context, key string, ttl time.Duration, kind Kind) (context.Context, *Call) {
	return t.start(ctx, kind, SpanRelease, key, ttl, true)
}

// Attempt records one acquisition attempt that ended with r, ok nodes
// having granted it.
func (c *Call) Attempt(r AcquireResult, ok int) {
	c.attempts++
	if c.span != nil {
		c.span.AddEvent(EventAttempt, trace.WithAttributes(
			AttrAttempt.Int(c.attempts), AttrOutcome.String(r.String()), AttrNodesOK.Int(ok)))
	}
}

// Traced reports whether the call has a span.
func (c *Call) Traced() bool { return c.span != nil }

// Nodes records the nodes' answers to the request that decides the call;
// a later call replaces them.
func (c *Call) Nodes(answers []Answer) { c.answers = answers }

// EndAcquire ends an acquisition: acquired with fence, or failed with err;
// answers are those of its last attempt, none when it made none.
func (c *Call) EndAcquire(r AcquireResult, fence uint64, answers []Answer, err error) {
	if m := c.t.metrics; m != nil {
		m.acquired(c.ctx, c.kind, r, time.Since(c.start))
	}
	if c.span == nil {
		return
	}
	c.answers = answers
	c.span.SetAttributes(AttrAttempts.Int(c.attempts))
	if r == Acquired {
		c.span.SetAttributes(AttrFence.Int64(int64(fence)))
	}
	c.end(r.String(), err)
}

// EndExtend ends an extension.
func (c *Call) EndExtend(r ExtendResult, err error) {
	if m := c.t.metrics; m != nil {
		m.extensions.Add(c.ctx, 1, m.extendAttrs[c.kind][r].add...)
	}
	if c.span != nil {
		c.end(r.String(), err)
	}
}

// EndRelease ends a release of key; one that did not reach a quorum
// (NotReleased) is logged with the nodes' answers.
func (c *Call) EndRelease(key string, r ReleaseResult, answers []Answer, err error) {
	if m := c.t.metrics; m != nil {
		m.releases.Add(c.ctx, 1, m.releaseAttrs[c.kind][r].add...)
	}
	if r == NotReleased {
		c.t.releaseFailed(c.ctx, key, answers)
	}
	if c.span != nil {
		c.end(r.String(), err)
	}
}

// end adds the node events and the outcome to the span, and ends it.
func (c *Call) end(outcome string, err error) {
	ok := 0
	for _, a := range c.answers {
		if a.Outcome == OK {
			ok++
		}
		c.span.AddEvent(EventNode, trace.WithAttributes(nodeEvent(a)...))
	}
	c.span.SetAttributes(AttrOutcome.String(outcome), AttrNodesOK.Int(ok))
	if err != nil {
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, err.Error())
	}
	c.span.End()
}

// nodeEvent returns the attributes of a node's answer.
func nodeEvent(a Answer) []attribute.KeyValue {
	kvs := []attribute.KeyValue{AttrNode.String(a.Node), AttrOutcome.String(a.Outcome.String())}
	if a.Outcome != NoAnswer && a.Outcome != NotAsked {
		kvs = append(kvs, AttrLatency.Float64(float64(a.Latency)/float64(time.Millisecond)))
	}
	if a.Err != nil {
		kvs = append(kvs, AttrError.String(a.Err.Error()))
	}
	if a.Outcome == Recovering {
		kvs = append(kvs, AttrRecoveringLeft.Int64(a.RecoveringLeft.Milliseconds()))
	}
	return kvs
}

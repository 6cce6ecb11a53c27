// Package telemetry is what the redlock library tells production operators:
// OpenTelemetry metrics and spans, and log records, through the providers
// and the logger given in redlock.Options, never global ones.
//
// A nil *Telemetry is off, and New returns nil when given nothing: the
// library checks for nil before each use, so that a client without
// providers or logger pays one predictable branch and no allocation. The
// package does not import the library; the library translates its own types
// (node outcomes, errors) into the ones here.
package telemetry

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the library's meter and tracer.
const ScopeName = "github.com/redlock-go/redlock"

// Config is what New needs: the user's providers and logger, any of them
// nil, and the client's nodes.
type Config struct {
	Logger         *slog.Logger
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// Nodes are the names of the client's nodes, in its order: the node
	// index passed to Node is an index into it.
	Nodes []string
	// NodeTimeout, when set, returns the per-node timeout of the client's
	// requests as it stands, for the redlock.node.timeout gauge, which
	// Client (the client's id) tells apart from other clients' on the
	// same meter.
	NodeTimeout func() time.Duration
	Client      string
}

// Telemetry records one client's metrics, spans and log records. It is
// safe for concurrent use.
type Telemetry struct {
	log     *slog.Logger // nil: no records
	metrics *metrics     // nil: no metrics
	tracer  trace.Tracer // nil: no spans
	nodes   []string
	health  []nodeHealth // one per node, for the records of its transitions
	// Records that could come once per request under an outage go through
	// a limiter each (see limiter).
	releaseLimit, backgroundLimit limiter
}

// New returns the telemetry of a client, or nil when cfg has no logger and
// no provider. A provider whose instruments cannot be created is reported
// to the logger, and the instruments it failed to create do nothing.
func New(cfg Config) *Telemetry {
	if cfg.Logger == nil && cfg.MeterProvider == nil && cfg.TracerProvider == nil {
		return nil
	}
	t := &Telemetry{log: cfg.Logger, nodes: append([]string(nil), cfg.Nodes...), health: make([]nodeHealth, len(cfg.Nodes))}
	if cfg.MeterProvider != nil {
		m, err := newMetrics(cfg.MeterProvider.Meter(ScopeName), t.nodes, cfg.Client, cfg.NodeTimeout)
		if err != nil && t.log != nil {
			t.log.Warn("redlock: some metrics are not recorded", "error", err)
		}
		t.metrics = m
	}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(ScopeName)
	}
	return t
}

// Close stops what the telemetry reports without being called, the gauges:
// a closed client's timeout is no longer collected. A nil Telemetry does
// nothing.
func (t *Telemetry) Close() {
	if t != nil && t.metrics != nil {
		t.metrics.close()
	}
}

// Outcome is what one node answered to one request, as the library's
// Outcome says it.
type Outcome uint8

// The outcomes of a node's request.
const (
	NoAnswer Outcome = iota
	OK
	Held
	Timeout
	Error
	Recovering
	NotAsked
	outcomeCount
)

var outcomeNames = [outcomeCount]string{"no_answer", "ok", "held", "timeout", "error", "recovering", "not_asked"}

// String returns the outcome's attribute value.
func (o Outcome) String() string { return outcomeNames[o] }

// Op is the request a node was sent.
type Op uint8

// The requests sent to nodes. The second step of an acquisition whose
// nodes disagree on the fencing counter, and the background re-sending of
// a release, are not recorded per node.
const (
	OpAcquire Op = iota
	OpExtend
	OpRelease
	OpInspect
	OpMarkReady
	opCount
)

var opNames = [opCount]string{"acquire", "extend", "release", "inspect", "mark_ready"}

// String returns the op's attribute value.
func (o Op) String() string { return opNames[o] }

// Answer is one node's part in a request, as the library's NodeResult says
// it.
type Answer struct {
	Node    string
	Outcome Outcome
	Err     error
	Latency time.Duration
	// RecoveringLeft is, for Recovering, how long until the node votes
	// again.
	RecoveringLeft time.Duration
}

// Kind is the API call a span or a measurement belongs to.
type Kind uint8

// The calls observed.
const (
	KindAcquire Kind = iota
	KindTryAcquire
	KindExtend
	KindRenew       // an extension by WithAutoRenew or Do, in the background
	KindExtendToken // Client.ExtendToken
	KindRelease
	KindReleaseToken // Client.ReleaseToken
	kindCount
)

var kindNames = [kindCount]string{"acquire", "try_acquire", "extend", "renew", "extend_token", "release", "release_token"}

// String returns the call's attribute value.
func (k Kind) String() string { return kindNames[k] }

// AcquireResult is how an Acquire or TryAcquire call ended.
type AcquireResult uint8

// How an acquisition ended.
const (
	Acquired AcquireResult = iota
	// Conflict: the lock is held elsewhere.
	Conflict
	// Unavailable: too few nodes answered, or they answered too late.
	Unavailable
	// NodesRecovering: too many nodes sit out the restart quarantine.
	NodesRecovering
	// Misconfigured: so many nodes refuse for a reason no retry fixes
	// that no quorum is possible.
	Misconfigured
	// Cancelled: the caller cancelled its context, or it ended before a
	// node refused.
	Cancelled
	acquireResults
)

var acquireNames = [acquireResults]string{"acquired", "conflict", "unavailable", "recovering", "config", "cancelled"}

// String returns the result's attribute value.
func (r AcquireResult) String() string { return acquireNames[r] }

// ExtendResult is how an extension ended.
type ExtendResult uint8

// How an extension ended.
const (
	Extended ExtendResult = iota
	// NotExtended: too few nodes answered in time; the lock stays valid
	// until its deadline.
	NotExtended
	// Lost: the lock is lost.
	Lost
	// WasReleased: the lock was released before the call.
	WasReleased
	// LimitReached: Options.MaxExtensions.
	LimitReached
	// Expired: the lock, never extended before, had expired before the
	// call.
	Expired
	extendResults
)

var extendNames = [extendResults]string{"extended", "not_extended", "lost", "released", "limit", "expired"}

// String returns the result's attribute value.
func (r ExtendResult) String() string { return extendNames[r] }

// ReleaseResult is how a release ended.
type ReleaseResult uint8

// How a release ended.
const (
	Released ReleaseResult = iota
	// NotHeld: no node that answered held the lock any more.
	NotHeld
	// NotReleased: too few nodes answered.
	NotReleased
	// AlreadyReleased: Release was called again.
	AlreadyReleased
	releaseResults
)

var releaseNames = [releaseResults]string{"released", "not_held", "not_released", "already_released"}

// String returns the result's attribute value.
func (r ReleaseResult) String() string { return releaseNames[r] }

// End is how a lock stopped being held.
type End uint8

// How a lock ends.
const (
	// EndReleased: Release.
	EndReleased End = iota
	// EndLost: its holder tried to keep it (renewal, Extend) and could
	// not; a Reason says why.
	EndLost
	// EndExpired: nobody tried to keep it, and it reached its deadline
	// (less the loss margin), as its TTL meant it to.
	EndExpired
	endCount
)

var endNames = [endCount]string{"released", "lost", "expired"}

// String returns the end's attribute value.
func (e End) String() string { return endNames[e] }

// Reason is why a lock was lost.
type Reason uint8

// The reasons a lock is lost.
const (
	// RenewalFailed: the lock was renewed in the background, and the
	// extensions failed until its deadline came within the loss margin.
	RenewalFailed Reason = iota
	// TakenOver: an extension found a majority of nodes no longer holding
	// the lock (it expired there, was deleted, or another holder has it).
	TakenOver
	// DeadlinePassed: the lock, which its holder had extended or asked to
	// renew, was not extended again before its deadline came within the
	// loss margin (the holder stopped extending, or renewal reached
	// MaxExtensions).
	DeadlinePassed
	// ForcedFree: an extension found the lock forced free by an operator
	// (Client.ForceRelease).
	ForcedFree
	reasonCount
)

var reasonNames = [reasonCount]string{"renewal_failed", "taken_over", "deadline_passed", "forced_by_operator"}

// String returns the reason's attribute value.
func (r Reason) String() string { return reasonNames[r] }

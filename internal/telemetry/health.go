package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// How a node's health is reported: on its transitions, never per request,
// so that a node that is down logs a few lines per outage.
const (
	// failingAfter is how many requests in a row a node must fail (time
	// out, or answer with an error) to be reported failing: one timeout
	// under load is no outage, and a client that takes locks sees three
	// failures of a node that is down within a few calls.
	failingAfter = 3
	// answeringAfter is how many requests in a row a failing node must
	// answer to be reported answering again, so that a node that flaps
	// between answers and timeouts is not reported at every change.
	answeringAfter = 3
)

// nodeHealth is what the log was last told of one node.
type nodeHealth struct {
	mu         sync.Mutex
	failing    bool      // reported failing
	recovering bool      // reported recovering under the restart quarantine
	fails      int       // requests failed in a row
	answers    int       // requests answered in a row, while failing
	since      time.Time // when it was reported failing
}

// transition is a change in a node's reported health.
type transition uint8

const (
	noChange     transition = iota
	toFailing               // Warn: the node stopped answering
	toAnswering             // Info: a failing node answers again
	toRecovering            // Info: the node sits out the restart quarantine
	toVoting                // Info: the quarantine is over
)

// Node records one node's answer to one request: in the metrics, and in
// the node's health, whose transitions are logged.
func (t *Telemetry) Node(ctx context.Context, node int, op Op, a Answer) {
	if t.metrics != nil {
		t.metrics.node(ctx, node, op, a)
	}
	if t.log == nil || node >= len(t.health) {
		return
	}
	tr, failingFor := t.health[node].observe(op, a)
	switch tr {
	case toFailing:
		attrs := []slog.Attr{slog.String("node", a.Node), slog.String("op", op.String()), slog.String("outcome", a.Outcome.String())}
		if a.Err != nil {
			attrs = append(attrs, slog.String("error", a.Err.Error()))
		}
		t.log.LogAttrs(ctx, slog.LevelWarn, "redlock: node failing", attrs...)
	case toAnswering:
		t.log.LogAttrs(ctx, slog.LevelInfo, "redlock: node answering again",
			slog.String("node", a.Node), slog.Duration("failing_for", failingFor))
	case toRecovering:
		t.log.LogAttrs(ctx, slog.LevelInfo, "redlock: node recovering from a restart, not voting",
			slog.String("node", a.Node), slog.Duration("votes_in", a.RecoveringLeft))
	case toVoting:
		t.log.LogAttrs(ctx, slog.LevelInfo, "redlock: node voting again after its restart quarantine",
			slog.String("node", a.Node))
	}
}

// observe updates the node's health with an answer to op, and returns the
// transition it makes, if any, and for a node answering again how long it
// was failing. An answer that says nothing of the node (none came before
// the decision, or the caller cancelled) changes nothing.
func (h *nodeHealth) observe(op Op, a Answer) (transition, time.Duration) {
	if a.Outcome == NoAnswer || a.Outcome == NotAsked || errors.Is(a.Err, context.Canceled) {
		return noChange, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if a.Outcome == Timeout || a.Outcome == Error {
		h.answers = 0
		h.fails++
		if !h.failing && h.fails >= failingAfter {
			h.failing, h.since = true, time.Now()
			return toFailing, 0
		}
		return noChange, 0
	}
	h.fails = 0
	if h.failing {
		h.answers++
		if h.answers < answeringAfter {
			return noChange, 0
		}
		h.failing, h.answers = false, 0
		return toAnswering, time.Since(h.since)
	}
	// Only an acquisition tells whether the node applies the quarantine.
	switch {
	case op != OpAcquire:
	case a.Outcome == Recovering && !h.recovering:
		h.recovering = true
		return toRecovering, 0
	case a.Outcome != Recovering && h.recovering:
		h.recovering = false
		return toVoting, 0
	}
	return noChange, 0
}

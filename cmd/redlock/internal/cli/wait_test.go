package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redlock-go/redlock"
)

// An attempt that the end of the wait cut short before any node answered
// leaves the reason, and so the exit code, of the last attempt that nodes
// answered; one that a node answered becomes the reason.
func TestWait_cutShortAttemptKeepsTheLastReason(t *testing.T) {
	attempt := func(cause error, outcomes ...redlock.Outcome) error {
		qe := &redlock.QuorumError{Op: "acquire", Key: "k", Quorum: 2, Err: redlock.ErrNotAcquired, Cause: cause}
		for _, o := range outcomes {
			qe.Nodes = append(qe.Nodes, redlock.NodeResult{Node: "n", Outcome: o})
		}
		return qe
	}
	held := attempt(nil, redlock.OutcomeHeld, redlock.OutcomeHeld, redlock.OutcomeNoAnswer)
	w := waiting{last: held}
	cut := attempt(context.DeadlineExceeded, redlock.OutcomeTimeout, redlock.OutcomeTimeout, redlock.OutcomeNoAnswer)
	// The reason is the last answered attempt's, and the failure still
	// says that the wait ran out.
	keeps := func(what string, got, want error, f failure) {
		t.Helper()
		var qe *redlock.QuorumError
		if !errors.As(got, &qe) || qe != want || classify(got) != f {
			t.Errorf("%s: reason %v (%s), want %v (%s)", what, got, classify(got), want, f)
		}
		if summary, _ := failureLines(got); !strings.HasSuffix(summary[0], "(the wait ran out)") {
			t.Errorf("%s: failure %q does not say that the wait ran out", what, summary[0])
		}
	}
	keeps("cut short", w.reason(cut), held, failConflict)
	recovering := attempt(context.DeadlineExceeded, redlock.OutcomeRecovering, redlock.OutcomeRecovering, redlock.OutcomeTimeout)
	if got := w.reason(recovering); got != recovering || w.last != recovering {
		t.Errorf("answered: reason %v, last %v, want the answered attempt", got, w.last)
	}
	keeps("cut short after recovering nodes", w.reason(cut), recovering, failRecovering)
	unasked := attempt(context.DeadlineExceeded, redlock.OutcomeNotAsked, redlock.OutcomeNotAsked, redlock.OutcomeNotAsked)
	keeps("ended before any node was asked, after recovering nodes", w.reason(unasked), recovering, failRecovering)
}

// The reason a wait gives is what its report says: which nodes answer, in
// which order, and which were not waited for change at every attempt
// without changing it, and are not a new reason to report before
// progressRepeat.
func TestWait_reasonIgnoresWhichNodesAnsweredFirst(t *testing.T) {
	attempt := func(ok int, outcomes ...redlock.Outcome) *redlock.QuorumError {
		qe := &redlock.QuorumError{Op: "acquire", Key: "k", OK: ok, Quorum: 2, Err: redlock.ErrNotAcquired}
		for i, o := range outcomes {
			qe.Nodes = append(qe.Nodes, redlock.NodeResult{Node: string(rune('a' + i)), Outcome: o})
		}
		return qe
	}
	held, noAnswer, ok := redlock.OutcomeHeld, redlock.OutcomeNoAnswer, redlock.OutcomeOK
	down, recovering := redlock.OutcomeError, redlock.OutcomeRecovering
	for _, same := range [][2]*redlock.QuorumError{
		{attempt(0, held, held, noAnswer), attempt(0, held, noAnswer, held)},
		{attempt(0, held, held, held), attempt(0, noAnswer, held, held)},
		{attempt(1, ok, down, down), attempt(0, noAnswer, down, down)},
	} {
		if a, b := waitReason(same[0]), waitReason(same[1]); a != b {
			t.Errorf("one reason told as two: %q and %q", a, b)
		}
	}
	for _, other := range [][2]*redlock.QuorumError{
		{attempt(0, held, held, noAnswer), attempt(0, recovering, recovering, noAnswer)},
		{attempt(1, ok, down, down), attempt(1, down, ok, down)},
		{attempt(0, held, held, noAnswer), attempt(0, held, down, down)},
	} {
		if a, b := waitReason(other[0]), waitReason(other[1]); a == b {
			t.Errorf("two reasons told as one: %q", a)
		}
	}
}

package cli

import (
	"context"
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
	if got := w.reason(cut); got != held || classify(got) != failConflict {
		t.Errorf("cut short: reason %v (%s), want the held attempt's", got, classify(got))
	}
	recovering := attempt(context.DeadlineExceeded, redlock.OutcomeRecovering, redlock.OutcomeRecovering, redlock.OutcomeTimeout)
	if got := w.reason(recovering); got != recovering || w.last != recovering {
		t.Errorf("answered: reason %v, last %v, want the answered attempt", got, w.last)
	}
	if got := w.reason(cut); got != recovering {
		t.Errorf("cut short after recovering nodes: reason %v", got)
	}
}

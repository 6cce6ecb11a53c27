package redlock

import (
	"testing"
	"time"
)

// attemptErr returns the error of an acquisition on three nodes, a quorum
// of two, whose nodes answered as outcomes say, each after took.
func attemptErr(took time.Duration, outcomes ...Outcome) error {
	qe := &QuorumError{Op: "acquire", Key: "k", Quorum: 2, Err: ErrNotAcquired}
	for _, o := range outcomes {
		qe.Nodes = append(qe.Nodes, NodeResult{Outcome: o, Latency: took})
	}
	return qe
}

// The backoff doubles over a streak of attempts a quorum did not answer,
// from the longest wait of the streak; an attempt that asked no node
// leaves it as it was; one that a quorum answered ends it.
func TestCongestion_streak(t *testing.T) {
	var g congestion
	silent := func(took time.Duration) error {
		return attemptErr(took, OutcomeHeld, OutcomeTimeout, OutcomeTimeout)
	}
	g.note(silent(40 * time.Millisecond))
	g.note(silent(time.Millisecond)) // refused unsent, at once
	if g.attempts != 2 || g.waited != 40*time.Millisecond {
		t.Fatalf("after two unanswered attempts: %+v, want 2 attempts from 40ms", g)
	}
	if p := g.pause(time.Millisecond); p < 40*time.Millisecond || p > 80*time.Millisecond {
		t.Errorf("pause %v after two unanswered attempts of 40ms, want 40ms to 80ms", p)
	}
	g.note(attemptErr(0, OutcomeNotAsked, OutcomeNotAsked, OutcomeNotAsked))
	if g.attempts != 2 {
		t.Errorf("an attempt that asked no node changed the streak: %+v", g)
	}
	for range 20 {
		g.note(silent(40 * time.Millisecond))
	}
	if p := g.pause(time.Millisecond); p < behindWait/2 || p > behindWait {
		t.Errorf("pause %v after a long streak, want %v to %v", p, behindWait/2, behindWait)
	}
	if p := g.pause(3 * time.Second); p != 3*time.Second {
		t.Errorf("pause %v where the retry strategy gives 3s, want 3s", p)
	}
	g.note(attemptErr(time.Millisecond, OutcomeHeld, OutcomeHeld, OutcomeTimeout))
	if g.attempts != 0 {
		t.Errorf("an attempt a quorum answered left the streak: %+v", g)
	}
	if p := g.pause(time.Millisecond); p != time.Millisecond {
		t.Errorf("pause %v once answered, want the retry strategy's 1ms", p)
	}
}

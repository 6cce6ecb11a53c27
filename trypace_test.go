package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// After a split vote, the client that the first node granted tries again
// at once, and every other one makes no attempt for one to three times
// what its attempt took, across its calls: a TryAcquire called meanwhile
// waits, within its per-node timeout, and fails without asking the nodes.
func TestTryAcquire_splitVoteGivesTheNextTurnToTheFirstNodesGrantee(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	split := func(granted int) error {
		nodes := make([]redlock.NodeResult, 3)
		for i := range nodes {
			nodes[i].Outcome = redlock.OutcomeHeld
		}
		nodes[granted].Outcome = redlock.OutcomeOK
		return &redlock.QuorumError{Op: "acquire", Key: "k", OK: 1, Quorum: 2, Nodes: nodes, Err: redlock.ErrNotAcquired}
	}
	if pause := client.PaceAfterSplit("first", time.Hour, split(0)); pause != 0 || client.PacedFor("first") != 0 {
		t.Errorf("the first node's grantee pauses %v, and is held back %v: want neither", pause, client.PacedFor("first"))
	}
	pause := client.PaceAfterSplit("other", time.Hour, split(2))
	if pause < time.Hour || pause > 3*time.Hour || client.PacedFor("other") <= 59*time.Minute {
		t.Fatalf("another grantee pauses %v, and is held back %v: want one to three times the attempt's hour", pause, client.PacedFor("other"))
	}
	// Not a split: refused everywhere, held by another.
	refused := split(0)
	refused.(*redlock.QuorumError).OK, refused.(*redlock.QuorumError).Nodes[0].Outcome = 0, redlock.OutcomeHeld
	if pause := client.PaceAfterSplit("held", time.Hour, refused); pause > 2*time.Hour || client.PacedFor("held") != 0 {
		t.Errorf("a refusal everywhere pauses %v, and holds back %v: want up to twice the attempt's time, and no hold", pause, client.PacedFor("held"))
	}

	before := scriptCalls(t, cluster)
	start := time.Now()
	_, err := client.TryAcquire(bg, "other")
	took := time.Since(start)
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &qe) {
		t.Fatalf("TryAcquire while held back: %v, want ErrNotAcquired with a *QuorumError", err)
	}
	for _, n := range qe.Nodes {
		if n.Outcome != redlock.OutcomeNotAsked {
			t.Errorf("node %s: %v, want not asked", n.Node, n.Outcome)
		}
	}
	if took < 300*time.Millisecond {
		t.Errorf("TryAcquire while held back returned after %v, want its per-node timeout, 300ms", took)
	}
	if calls := scriptCalls(t, cluster) - before; calls != 0 {
		t.Errorf("%d script calls while held back, want none", calls)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := client.TryAcquire(ctx, "other"); !errors.Is(err, context.Canceled) {
		t.Errorf("TryAcquire held back, with its context cancelled: %v, want context.Canceled", err)
	}
	if _, err := client.TryAcquire(bg, "first"); err != nil {
		t.Errorf("TryAcquire of a key the client is not held back from: %v", err)
	}
}

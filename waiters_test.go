package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wait"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestWaiters_trailingReleaseOutlivesTheTurn(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := pipeClient(t, cluster, pipeAdapters[0].conn)
	// A release's fan-out, one of its nodes unanswered: that node is
	// paused.
	if err := cluster.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Node(2).Resume() })
	_, _, unfinished := c.trackedFanout(context.Background(), 5*time.Second, releaser("k", "tok"), nil, nodes.IsOne, c.decided)
	lag := unfinished.Lagging()
	if lag == nil {
		t.Fatal("the paused node's release did not trail")
	}
	w := wait.NewTurns()
	if !w.Take(context.Background(), "k", nil).Taken {
		t.Fatal("free turn not taken")
	}
	w.AddTrailing("k", lag)
	w.GiveBack("k", false)
	if got := w.Trailing("k"); got != lag {
		t.Fatalf("trailing release %p after the turn ended, want %p", got, lag)
	}
	if w.Busy("k") {
		t.Error("busy with only a trailing release")
	}
	// A new turn while the release trails: it sees the release.
	if tn := w.Take(context.Background(), "k", nil); !tn.Taken || tn.HeldHere {
		t.Fatalf("turn %+v, want taken, not held here", tn)
	}
	// Every node answered the release: the record goes, and once the turn
	// is given back, the key's state too.
	if err := cluster.Node(2).Resume(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); w.Trailing("k") != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("trailing release kept after every node answered")
		}
	}
	w.GiveBack("k", false)
	if n := w.Len(); n != 0 {
		t.Errorf("%d keys' state left behind", n)
	}
}

// A key's next requests wait behind every earlier release still under way
// on a node, not only the last one: a release answered for a node without
// asking it, its attempt's request there cancelled unsent, does not cover
// the release before it, still waiting there behind an earlier attempt
// that a later one must not overtake. Before, the last release took the
// record's place: an election's next attempt overtook a stale one on a
// slow node, which then put the new leader back in line there for
// QueueLasts instead of its lead's TTL.
func TestWaiters_trailingKeepsEveryReleaseUnderWay(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := pipeClient(t, cluster, pipeAdapters[0].conn)
	slow := cluster.Node(2)
	if err := slow.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slow.Resume() })
	fanout := func(token string, lag *nodes.Lagging) *nodes.Flight {
		t.Helper()
		_, _, unfinished := c.trackedFanout(context.Background(), 5*time.Second, releaser("k", token), lag, nodes.IsOne, c.decided)
		if unfinished == nil {
			t.Fatalf("%s: every node answered, the paused one too", token)
		}
		return unfinished
	}
	w := wait.NewTurns()
	stale := fanout("stale", nil)                                            // under way on the slow node
	w.AddTrailing("k", fanout("rel", stale.Lagging().Releasing()).Lagging()) // waits there behind it
	next := fanout("next", w.Trailing("k"))                                  // waits there behind the release
	// Its release cancels its request to the slow node, unsent, and
	// answers for it.
	w.AddTrailing("k", fanout("next-rel", next.Lagging().Releasing()).Lagging())
	if !w.Trailing("k").Holds(2) {
		t.Fatal("the key's next request to the slow node would not wait for the release still waiting there")
	}
	if err := slow.Resume(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); w.Trailing("k") != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("releases kept as trailing after every node answered them")
		}
	}
	if n := w.Len(); n != 0 {
		t.Errorf("%d keys' state left behind", n)
	}
}

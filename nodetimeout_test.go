package redlock_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// While the nodes' replies come late, the per-node timeout rises to twice
// the longest time a majority took to reply, up to MaxNodeTimeout (a
// quarter of the TTL, at most 400 ms, by default); set to NodeTimeout, it
// stays there.
func TestNodeTimeout_risesWhileRepliesComeLate(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) { testNodeTimeoutRises(t, a) })
}

func testNodeTimeoutRises(t *testing.T, a adapter) {
	const nodeTimeout, pause, ttl = 50 * time.Millisecond, 150 * time.Millisecond, 8 * time.Second
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	clients := []struct {
		name        string
		max         time.Duration
		least, most time.Duration // the node timeout after late replies
		client      *redlock.Client
	}{
		{name: "default", least: 3 * nodeTimeout, most: 400 * time.Millisecond},
		{name: "capped", max: 120 * time.Millisecond, least: 120 * time.Millisecond, most: 120 * time.Millisecond},
		{name: "fixed", max: nodeTimeout, least: nodeTimeout, most: nodeTimeout},
	}
	for i := range clients {
		c := &clients[i]
		c.client = newClient(t, cluster, a, &redlock.Options{TTL: ttl, NodeTimeout: nodeTimeout, MaxNodeTimeout: c.max})
		if l, err := c.client.TryAcquire(bg, "warm"); err != nil {
			t.Fatal(err)
		} else {
			l.Release(bg)
		}
	}

	// Every node silent for a while: each attempt times out, and its
	// replies land once the nodes are back.
	pauseAll(t, cluster)
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { _, errs[i] = c.client.TryAcquire(bg, "first") })
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("%s: every node paused: %v", clients[i].name, err)
		}
	}
	time.Sleep(pause) // the fault's length, not a wait for a result
	resumeAll(t, cluster)
	eventually(t, "the late replies remembered", func() bool {
		return clients[0].client.RecentReplyTime() >= pause-nodeTimeout && clients[1].client.RecentReplyTime() >= pause-nodeTimeout
	})
	if got := clients[2].client.RecentReplyTime(); got != 0 {
		t.Errorf("fixed: remembers a reply time of %v", got)
	}

	for _, c := range clients {
		if got := c.client.NodeTimeoutFor(ttl); got < c.least || got > c.most {
			t.Errorf("%s: node timeout %v after late replies, want between %v and %v", c.name, got, c.least, c.most)
		}
	}

	// The next attempt waits that long for silent nodes. A node's request
	// may end on its own context a little before the fan-out's deadline
	// (and decide the attempt, the other nodes then unheard).
	pauseAll(t, cluster)
	for _, c := range clients {
		_, err := c.client.TryAcquire(bg, "second")
		timeouts := 0
		for _, n := range quorumError(t, err).Nodes {
			switch {
			case n.Outcome == redlock.OutcomeNoAnswer:
			case n.Outcome != redlock.OutcomeTimeout:
				t.Fatalf("%s: %s answered %v while paused: %v", c.name, n.Node, n.Outcome, err)
			case n.Latency < c.least-time.Millisecond:
				t.Errorf("%s: %s timed out after %v, want at least %v", c.name, n.Node, n.Latency, c.least)
			default:
				timeouts++
			}
		}
		if timeouts == 0 {
			t.Errorf("%s: no node timed out while paused: %v", c.name, err)
		}
	}
}

func pauseAll(t *testing.T, cluster *redlocktest.Cluster) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		if err := n.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { resumeAll(t, cluster) })
}

func resumeAll(t *testing.T, cluster *redlocktest.Cluster) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		if n.Paused() {
			if err := n.Resume(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

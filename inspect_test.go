package redlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestInspect(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
		opts := &redlock.Options{TTL: 2 * time.Second, RecoveryDelay: 5 * time.Second, NodeTimeout: 300 * time.Millisecond,
			KeyPrefix: "app:"}
		t.Run("heldLock", func(t *testing.T) { inspectHeldLock(t, cluster, newClient(t, cluster, a, opts)) })

		// A free key, a foreign key without expiry, a dead node and a
		// node restarted without its data.
		client := breakInspectedNodes(t, cluster, a, opts)
		states, err := client.Inspect(bg, "foreign")
		if err != nil {
			t.Fatal(err)
		}
		t.Run("freeKey", func(t *testing.T) { wantFreeKey(t, states[0]) })
		t.Run("foreignKeyWithoutExpiry", func(t *testing.T) { wantForeignKeyWithoutExpiry(t, states[1]) })
		t.Run("deadNode", func(t *testing.T) {
			if s := states[3]; s.Err == nil {
				t.Errorf("dead node: %+v", s)
			}
		})
		t.Run("nodeRestartedEmpty", func(t *testing.T) { wantRestartedEmpty(t, cluster.Node(4), states[4], opts) })
		t.Run("acquisitionStartsQuarantine", func(t *testing.T) { inspectQuarantineStarted(t, cluster.Node(4), client, opts) })

		t.Run("emptyKeyRefused", func(t *testing.T) {
			if _, err := client.Inspect(bg, ""); err == nil {
				t.Error("empty key accepted")
			}
		})
	})
}

// inspectHeldLock acquires a lock through client and inspects it: every node
// holds it, and a quorum has its fencing token as their counter.
func inspectHeldLock(t *testing.T, cluster *redlocktest.Cluster, client *redlock.Client) {
	lock, err := client.TryAcquire(bg, "inspected")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	waitForKey(t, cluster, "app:inspected", lock.Token())
	states, err := client.Inspect(bg, "inspected")
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 5 {
		t.Fatalf("%d states for 5 nodes", len(states))
	}
	wantHeldOnEveryNode(t, cluster, states, lock)
	wantQuorumAtFence(t, states, lock)
}

// wantHeldOnEveryNode fails the test unless every node of cluster, in
// order, holds lock with a TTL of at most 2 s and a fencing counter, and has
// its restart marker.
func wantHeldOnEveryNode(t *testing.T, cluster *redlocktest.Cluster, states []redlock.NodeState, lock *redlock.Lock) {
	t.Helper()
	for i, s := range states {
		if s.Node != cluster.Node(i).Addr() || s.Err != nil || s.Holder != lock.Token() ||
			s.TTL <= 0 || s.TTL > 2*time.Second || s.Fence == 0 || s.Recovering || s.NoMarker {
			t.Errorf("node %d: %+v", i, s)
		}
	}
}

// wantQuorumAtFence fails the test unless at least 3 of the nodes have the
// lock's fencing token as their counter.
func wantQuorumAtFence(t *testing.T, states []redlock.NodeState, lock *redlock.Lock) {
	t.Helper()
	agree := 0
	for _, s := range states {
		if s.Fence == lock.Fence() {
			agree++
		}
	}
	if agree < 3 {
		t.Errorf("%d nodes have the lock's fence %d, want at least a quorum: %+v", agree, lock.Fence(), states)
	}
}

// breakInspectedNodes sets a key without expiry on node 1, restarts node 4
// without its data and kills node 3. It returns a new client: connections
// from before the restart may fail once.
func breakInspectedNodes(t *testing.T, cluster *redlocktest.Cluster, a adapter, opts *redlock.Options) *redlock.Client {
	t.Helper()
	if _, err := cluster.Node(1).Do(bg, "SET", "app:foreign", "their-token"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Node(4).Restart(bg); err != nil {
		t.Fatal(err)
	}
	client := coldClient(t, cluster, a, opts)
	if err := cluster.Node(3).Kill(); err != nil {
		t.Fatal(err)
	}
	return client
}

// wantFreeKey fails the test unless s is a node's state of a key nobody
// holds.
func wantFreeKey(t *testing.T, s redlock.NodeState) {
	t.Helper()
	if s.Err != nil || s.Holder != "" || s.TTL != 0 || s.Fence != 0 || s.Recovering {
		t.Errorf("free key: %+v", s)
	}
}

// wantForeignKeyWithoutExpiry fails the test unless s is a node's state of
// a key set, without expiry, to "their-token".
func wantForeignKeyWithoutExpiry(t *testing.T, s redlock.NodeState) {
	t.Helper()
	if s.Err != nil || s.Holder != "their-token" || s.TTL >= 0 {
		t.Errorf("foreign key without expiry: %+v", s)
	}
}

// wantRestartedEmpty fails the test unless s is the state of node n,
// restarted without its data and not contacted since: it has no marker and
// is recovering for the whole delay, and Inspect did not write its marker.
func wantRestartedEmpty(t *testing.T, n *redlocktest.Node, s redlock.NodeState, opts *redlock.Options) {
	t.Helper()
	if s.Err != nil || !s.NoMarker || !s.Recovering || s.RecoveringLeft != opts.RecoveryDelay {
		t.Errorf("node restarted empty: %+v", s)
	}
	// Inspect changes nothing: the restarted node still has no marker.
	if v := keyOn(t, n, redlock.MarkerKey); v != "" {
		t.Errorf("Inspect wrote the marker: %q", v)
	}
}

// inspectQuarantineStarted acquires a lock through client and inspects node
// n, restarted without its data: the acquisition wrote its marker and
// started its quarantine.
func inspectQuarantineStarted(t *testing.T, n *redlocktest.Node, client *redlock.Client, opts *redlock.Options) {
	// The first acquisition starts its quarantine (it may return before
	// the node answered).
	client.TryAcquire(bg, "other")
	deadline := time.Now().Add(2 * time.Second)
	for keyOn(t, n, redlock.MarkerKey) == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	states, _ := client.Inspect(bg, "other")
	if s := states[n.Index()]; s.NoMarker || !s.Recovering || s.RecoveringLeft <= 0 || s.RecoveringLeft > opts.RecoveryDelay {
		t.Errorf("node restarted empty, after an acquisition: %+v", s)
	}
}

// A restart marker that is not a number is the node's error in Inspect, as in
// an acquisition, unless the quarantine is off; MarkReady refuses to
// replace it (it may be another program's key by that name) and leaves it
// as it was.
func TestInspect_markerNotANumber(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	if _, err := node.Do(bg, "SET", redlock.MarkerKey, "not a time"); err != nil {
		t.Fatal(err)
	}
	opts := &redlock.Options{TTL: 2 * time.Second, RecoveryDelay: 5 * time.Second, NodeTimeout: 300 * time.Millisecond}
	client := coldClient(t, cluster, adapters[0], opts)
	t.Run("nodeError", func(t *testing.T) { inspectAndAcquireOverBadMarker(t, client) })
	t.Run("quarantineOff", func(t *testing.T) {
		off := *opts
		off.DisableQuarantine = true
		states, err := coldClient(t, cluster, adapters[1], &off).Inspect(bg, "k")
		if err != nil {
			t.Fatal(err)
		}
		wantVotingNode(t, states[0], "marker not a number, quarantine off")
	})
	t.Run("keptByMarkReady", func(t *testing.T) {
		err := client.MarkReady(bg, true)
		if err == nil || !strings.Contains(err.Error(), "did not write") {
			t.Fatalf("MarkReady over another program's key: %v, want a refusal saying so", err)
		}
		if v := keyOn(t, node, redlock.MarkerKey); v != "not a time" {
			t.Errorf("marker %q after MarkReady, want it untouched", v)
		}
	})
}

// inspectAndAcquireOverBadMarker inspects a node whose restart marker is not
// a number, and tries to acquire a lock on it: both report the node's error.
func inspectAndAcquireOverBadMarker(t *testing.T, client *redlock.Client) {
	states, err := client.Inspect(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	want := `redlock: redlock:marker is "not a time", not a time in microseconds`
	if s := states[0]; s.Err == nil || s.Err.Error() != want || s.Recovering || s.NoMarker {
		t.Errorf("marker not a number: %+v, want the error %q", s, want)
	}
	if _, err := client.TryAcquire(bg, "k"); err == nil || !strings.Contains(err.Error(), "is not a time in microseconds") {
		t.Errorf("acquire with a marker not a number: %v", err)
	}
}

// wantVotingNode fails the test unless s is the state of a node that
// answered and votes: not recovering, with a marker.
func wantVotingNode(t *testing.T, s redlock.NodeState, when string) {
	t.Helper()
	if s.Err != nil || s.Recovering || s.RecoveringLeft != 0 || s.NoMarker {
		t.Errorf("%s: %+v", when, s)
	}
}

// Inspect counts the clients that wait, not the entries a client that
// stopped waiting left behind: a Client that crashed while it waited sends
// nothing, and its entry lapses (QueueLasts) while another waiter keeps
// the queue.
func TestInspect_waitingLeavesOutLapsedEntries(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	held, err := holder.TryAcquire(bg, "doc", redlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)
	gone := newClient(t, cluster, adapters[1], patientNodes(fast()))
	stays := newClient(t, cluster, adapters[0], patientNodes(fast()))
	acquireLater(gone, "doc")
	eventually(t, "the first waiter queued", queuedInOrder(t, cluster, "doc", gone.ID()))
	acquireLater(stays, "doc")
	eventually(t, "the second waiter queued", queuedInOrder(t, cluster, "doc", gone.ID(), stays.ID()))
	gone.Crash()
	closed := time.Now()
	for {
		states, err := holder.Inspect(bg, "doc")
		if err != nil {
			t.Fatal(err)
		}
		waiting := 0
		for _, s := range states {
			waiting = max(waiting, s.Waiting)
		}
		if waiting == 1 {
			return
		}
		if time.Since(closed) > redlock.QueueLasts+time.Second {
			t.Fatalf("%d waiting on a node %v after a waiter's Client closed, want 1: the other's entry lapsed", waiting, time.Since(closed))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

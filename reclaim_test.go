package redlock_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A lock won while another client's attempt held one of three nodes (two
// candidates of an election trying at once) rested on the other two for as
// long as it was renewed: its renewals extend only where it is held. One
// of those two down, the lock was lost while two nodes of three were up.
// Now a renewal takes the lock on the nodes that refused it once the key is
// free there, and the lock outlives one node down. The node's fencing
// counter is raised to the lock's fencing token when behind it, and left
// where the other client's attempts took it past: either way CheckFence,
// with one of the nodes that granted the lock down, still finds the lock's
// token current.
func TestRenewal_reclaimsANodeThatRefusedTheLock(t *testing.T) {
	for _, counter := range []string{"1", "9000000000000000000"} {
		t.Run("counter "+counter, func(t *testing.T) {
			forEachAdapter(t, func(t *testing.T, a adapter) { reclaimAfterASplitVote(t, a, counter) })
		})
	}
}

// reclaimAfterASplitVote wins a lock while node 2 of three holds another
// value and has counter as its fencing counter, frees node 2, and checks
// that a renewal takes it there and that the lock outlives node 0 down.
func reclaimAfterASplitVote(t *testing.T, a adapter, counter string) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	const ttl = 3 * time.Second
	client := newClient(t, cluster, a, &redlock.Options{TTL: ttl, NodeTimeout: 500 * time.Millisecond})
	// Another client's attempt holds node 2 as the lock is won, and its
	// clean-up frees the key there afterwards.
	do(t, cluster.Node(2), "SET", "split", "another-attempt")
	do(t, cluster.Node(2), "SET", "redlock:fence:split", counter)
	do(t, cluster.Node(2), "CONFIG", "RESETSTAT")
	lock, err := client.TryAcquire(bg, "split", redlock.WithAutoRenew())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	// TryAcquire returns at a quorum: node 2 refuses the attempt before the
	// key is freed there, or the attempt itself takes it.
	eventually(t, "node 2 answered the attempt", func() bool { return scriptCallsOn(t, cluster.Node(2)) > 0 })
	do(t, cluster.Node(2), "DEL", "split")
	eventually(t, "the lock taken on node 2 by a renewal", func() bool {
		return keyOn(t, cluster.Node(2), "split") == lock.Token()
	})
	// Raised to the lock's fencing token, not past it; never lowered.
	behind, _ := strconv.ParseUint(counter, 10, 64)
	want := max(lock.Fence(), behind)
	if fence := keyOn(t, cluster.Node(2), "redlock:fence:split"); fence != strconv.FormatUint(want, 10) {
		t.Fatalf("node 2's fencing counter is %s, want %d (the lock's is %d)", fence, want, lock.Fence())
	}
	if err := cluster.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	// Two renewals later, on nodes 1 and 2, the lock still holds.
	past := lock.Until().Add(ttl)
	eventually(t, "the lock renewed with node 0 down", func() bool {
		if err := lock.Err(); err != nil {
			t.Fatalf("lost with node 0 down: %v", err)
		}
		return lock.Until().After(past)
	})
	res, err := client.CheckFence(bg, "split", lock.Fence())
	if err != nil || !res.Current || res.Fence != lock.Fence() {
		t.Fatalf("CheckFence with node 0 down: %+v, %v; want current, with the lock's fencing token %d", res, err, lock.Fence())
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		if v := keyOn(t, cluster.Node(i), "split"); v != "" {
			t.Errorf("node %d still holds %q after the release", i, v)
		}
	}
}

// The script that takes a held lock on one more node sets the key only
// where it is free and the node is out of its restart quarantine, and
// raises the key's fencing counter to the lock's fencing token, never past
// it and never lowering it.
func TestReclaim_takesOnlyAFreeKeyAndRaisesTheCounterToTheLocksToken(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	reclaim := func(key, recovery, fence string) string {
		t.Helper()
		return do(t, node, "EVAL", redlock.ReclaimScriptSource, "4", key, "redlock:fence:"+key, "redlock:marker", "redlock:process",
			"mine", "60000", recovery, "90000", now, fence)
	}
	for _, tc := range []struct {
		name, holder, counter, recovery string
		want, holds, fence              string
	}{
		{name: "free, counter behind", counter: "5", recovery: "0", want: "1", holds: "mine", fence: "100"},
		{name: "free, counter ahead", counter: "200", recovery: "0", want: "1", holds: "mine", fence: "200"},
		{name: "free, no counter", recovery: "0", want: "1", holds: "mine", fence: "100"},
		{name: "held by another", holder: "other", counter: "5", recovery: "0", want: "0", holds: "other", fence: "5"},
		{name: "held by the lock", holder: "mine", counter: "100", recovery: "0", want: "1", holds: "mine", fence: "100"},
		{name: "recovering", counter: "5", recovery: "30000000", want: "0", holds: "", fence: "5"},
	} {
		key := "reclaim:" + strings.ReplaceAll(tc.name, " ", "-")
		if tc.holder != "" {
			do(t, node, "SET", key, tc.holder, "PX", "60000")
		}
		if tc.counter != "" {
			do(t, node, "SET", "redlock:fence:"+key, tc.counter, "PX", "60000")
		}
		if tc.recovery != "0" {
			// A node without its restart marker, as after a restart
			// that lost its data: it recovers.
			do(t, node, "DEL", "redlock:marker", "redlock:process")
		}
		// The lock's own fencing token is 100; "no counter" restarts no
		// higher, the node's clock less a second being far below now's.
		fence := "100"
		if tc.counter == "" {
			fence = now
			tc.fence = now
		}
		if got := reclaim(key, tc.recovery, fence); got != tc.want {
			t.Errorf("%s: reclaim answered %s, want %s", tc.name, got, tc.want)
		}
		if got := keyOn(t, node, key); got != tc.holds {
			t.Errorf("%s: the key holds %q, want %q", tc.name, got, tc.holds)
		}
		if got := keyOn(t, node, "redlock:fence:"+key); got != tc.fence {
			t.Errorf("%s: the counter is %q, want %q", tc.name, got, tc.fence)
		}
	}
}

package redlock_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// markReadyOpts are the options of the MarkReady tests: locks that outlive
// the test's steps by far, restarts of Redis Clusters included on a loaded
// machine, and a recovery delay to match.
func markReadyOpts() *redlock.Options {
	return &redlock.Options{TTL: 2 * time.Minute, RecoveryDelay: 2 * time.Minute, NodeTimeout: 300 * time.Millisecond}
}

// Client A holds a lock on three nodes and two of them restart empty; a
// service that calls MarkReady(false) at start-up must not mark them: they
// would grant the lock to client B while A still holds it.
func TestMarkReady_refusesNodesThatLostAHeldLock(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	opts := markReadyOpts()
	a := newClient(t, cluster, adapters[0], opts)
	held, err := a.TryAcquire(bg, "job")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)
	waitForKey(t, cluster, "job", held.Token())
	for _, i := range []int{1, 2} {
		if err := cluster.Node(i).Restart(bg); err != nil {
			t.Fatal(err)
		}
	}
	err = coldClient(t, cluster, adapters[1], opts).MarkReady(bg, false)
	if !errors.Is(err, redlock.ErrNotBrandNew) {
		t.Fatalf("MarkReady(false) with two nodes of three empty under a held lock: %v, want ErrNotBrandNew", err)
	}
	want := cluster.Node(0).Addr() + " ready but " + cluster.Node(1).Addr() + ", " + cluster.Node(2).Addr() + " recovering"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("the refusal does not say %q: %v", want, err)
	}
	for _, i := range []int{1, 2} {
		if v := keyOn(t, cluster.Node(i), redlock.MarkerKey); v != "" {
			t.Errorf("node %d: marker %q after the refusal, want none", i, v)
		}
	}
	if lock, err := coldClient(t, cluster, adapters[0], opts).TryAcquire(bg, "job"); err == nil {
		lock.Release(bg)
		t.Fatalf("double grant: client B took the lock that A holds for %s more", time.Until(held.Until()))
	}
	if held.Err() != nil {
		t.Fatalf("A's lock ended before B tried (machine too slow?): %v", held.Err())
	}
}

// The mark-ready script marks a recovering node only when it is as the
// check read it: the same process, and the same marker if it had one.
func TestMarkReady_scriptRefusesANodeChangedSinceTheCheck(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := cluster.Node(0)
	info, err := n.Do(bg, "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	_, runID, _ := strings.Cut(info, "run_id:")
	runID = strings.Fields(runID)[0]
	recovering := strconv.FormatInt(time.Now().UnixMicro(), 10)
	mark := func(checked ...string) error {
		args := []string{"EVAL", redlock.MarkReadyScriptSource, "2", redlock.MarkerKey, redlock.ProcessKey, "10000000", "0", strconv.Itoa(len(checked) / 2)}
		_, err := n.Do(bg, append(args, checked...)...)
		return err
	}
	for _, c := range []struct {
		name    string
		checked []string
	}{
		{"another process", []string{"0123456789abcdef", ""}},
		{"another marker", []string{runID, "42"}},
		{"a node the check did not read", nil},
	} {
		if _, err := n.Do(bg, "SET", redlock.MarkerKey, recovering); err != nil {
			t.Fatal(err)
		}
		if err := mark(c.checked...); err == nil || !strings.Contains(err.Error(), "changed since MarkReady checked") {
			t.Errorf("%s: %v, want the node refused", c.name, err)
		}
		if v := keyOn(t, n, redlock.MarkerKey); v != recovering {
			t.Errorf("%s: marker %q, want it untouched", c.name, v)
		}
	}
	// A marker written since a check that found none starts a quarantine.
	if err := mark("0123456789abcdef", "7", runID, ""); err != nil {
		t.Errorf("the marker an acquisition wrote since the check: %v, want it marked", err)
	}
	if v := keyOn(t, n, redlock.MarkerKey); v != "0" {
		t.Errorf("marker %q, want 0", v)
	}
}

// Over three Redis Clusters, each hash slot is judged by its own markers:
// a slot unmarked everywhere is marked beside slots ready everywhere, and
// when the shard that holds a lock's slot restarts empty in two clusters,
// MarkReady(false) marks nothing and names the slots and the clusters.
func TestMarkReady_redisClusterJudgesEachSlot(t *testing.T) {
	t.Parallel()
	var conns []redlock.Conn
	var clusters []*redlocktest.Cluster
	for range 3 {
		c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
		clusters = append(clusters, c)
		conns = append(conns, clusterAdapters[len(clusters)%2].conn(t, c.Addrs()))
	}
	a, err := redlock.New(conns, markReadyOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.MarkReady(bg, false); err != nil {
		t.Fatal(err)
	}
	const key = "job"
	slot := redlocktest.KeySlot(key)
	unused := (slot + redlocktest.SlotCount/2) % redlocktest.SlotCount
	for _, c := range clusters {
		if _, err := c.NodeForSlot(unused).Do(bg, "DEL", redlock.SlotMarkerKey(unused)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.MarkReady(bg, false); err != nil {
		t.Fatalf("a slot unmarked on every cluster: %v, want it marked", err)
	}
	held, err := a.TryAcquire(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)
	for _, c := range clusters {
		for deadline := time.Now().Add(2 * time.Second); keyOn(t, c.NodeForKey(key), key) != held.Token(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the lock did not reach every cluster")
			}
		}
	}
	shardSlots := 0 // the clusters split the slots alike
	for _, r := range clusters[0].NodeForKey(key).Slots() {
		shardSlots += r.Last - r.First + 1
	}
	for _, c := range clusters[:2] {
		if err := c.NodeForKey(key).Restart(bg); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitRedisCluster(bg); err != nil {
			t.Fatal(err)
		}
	}
	b, err := redlock.New([]redlock.Conn{clusterAdapters[0].conn(t, clusters[0].Addrs()), clusterAdapters[1].conn(t, clusters[1].Addrs()),
		clusterAdapters[0].conn(t, clusters[2].Addrs())}, markReadyOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.MarkReady(bg, false)
	if !errors.Is(err, redlock.ErrNotBrandNew) {
		t.Fatalf("MarkReady(false) with the lock's shard empty in two clusters of three: %v, want ErrNotBrandNew", err)
	}
	names := b.Nodes()
	want := strconv.Itoa(shardSlots) + " of 16384 hash slots"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), names[2]+" ready but "+names[0]+", "+names[1]+" recovering") {
		t.Errorf("the refusal does not say %q and which clusters are ready: %v", want, err)
	}
	for _, c := range clusters[:2] {
		if v := keyOn(t, c.NodeForKey(key), redlock.SlotMarkerKey(slot)); v != "" {
			t.Errorf("the restarted shard's marker %q after the refusal, want none", v)
		}
	}
	if lock, err := b.TryAcquire(bg, key); err == nil {
		lock.Release(bg)
		t.Fatalf("double grant: client B took the lock that A holds for %s more", time.Until(held.Until()))
	}
	if held.Err() != nil {
		t.Fatalf("A's lock ended before B tried (machine too slow?): %v", held.Err())
	}
}

package cluster_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/torture/cluster"
)

// A node watched by a Sentinel is reached through it; a cut replica misses
// what its master wrote since, and once the master is killed the Sentinel,
// not the harness, promotes it. The old master rejoins as its replica and
// a second failover, with the link up, hands everything back.
func TestPair_sentinelFailsOverToALaggingReplicaAndBack(t *testing.T) {
	t.Parallel()
	c, err := cluster.New(t.Context(), cluster.Options{Nodes: 1, Workers: 1, Replicas: true, Sentinel: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if u := c.WorkerURLs(0)[0]; !strings.HasSuffix(u, "?master_name="+cluster.MasterName(0)) {
		t.Errorf("worker URL %q, want the Sentinel's URL of the node", u)
	}
	p := c.Pair(0)
	first := p.Master()
	do(t, first, "SET", "before", "1")
	waitSynced(t, p)
	if err := p.CutReplication(t.Context()); err != nil {
		t.Fatal(err)
	}
	do(t, first, "SET", "after", "1")
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(t.Context()); err == nil {
		t.Error("Promote of a node a Sentinel watches succeeded")
	}
	if err := p.AwaitFailover(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p.Master() == first || c.Node(0) != p.Master() {
		t.Fatal("AwaitFailover did not swap the roles")
	}
	if !has(t, p.Master(), "before") || has(t, p.Master(), "after") {
		t.Fatal("the promoted replica should have the key written before the cut and not the one after")
	}
	failBack(t, p, first)
}

// failBack makes the old master first, now down, rejoin p as its replica,
// heals the replication link and fails p over again, with the link up:
// first must come back with everything.
func failBack(t *testing.T, p *cluster.Pair, first *redlocktest.Node) {
	t.Helper()
	if err := p.Rejoin(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.HealReplication(t.Context()); err != nil {
		t.Fatal(err)
	}
	do(t, p.Master(), "SET", "again", "1")
	waitSynced(t, p)
	if err := p.Master().Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.AwaitFailover(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p.Master() != first || !has(t, first, "again") || !has(t, first, "before") {
		t.Fatal("the second failover lost keys the replica had copied")
	}
}

// do runs a command on n that must succeed.
func do(t *testing.T, n *redlocktest.Node, args ...string) {
	t.Helper()
	if _, err := n.Do(t.Context(), args...); err != nil {
		t.Fatal(err)
	}
}

// has reports whether n holds key.
func has(t *testing.T, n *redlocktest.Node, key string) bool {
	t.Helper()
	_, err := n.Do(t.Context(), "GET", key)
	if err != nil && !errors.Is(err, redlocktest.ErrNil) {
		t.Fatal(err)
	}
	return err == nil
}

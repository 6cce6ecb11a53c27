package cluster_test

import (
	"context"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/torture/cluster"
)

// A replica whose link was cut misses what its master wrote since; promoted,
// it answers on the node's links in the master's place, and the old master
// rejoins as its replica and catches up. A second failover, with the link
// up, hands everything over.
func TestPair_failoverToALaggingReplicaAndBack(t *testing.T) {
	t.Parallel()
	c, err := cluster.New(t.Context(), cluster.Options{Nodes: 1, Workers: 1, Replicas: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := c.Pair(0)
	first := p.Master()
	w := client(t, c.WorkerURLs(0)[0])
	defer w.Close()
	set(t, w, "before")
	waitSynced(t, p)
	if err := p.CutReplication(t.Context()); err != nil {
		t.Fatal(err)
	}
	set(t, w, "after")
	if err := p.Master().Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p.Master() == first || c.Node(0) != p.Master() {
		t.Fatal("Promote did not swap the roles")
	}
	if !exists(t, w, "before") || exists(t, w, "after") {
		t.Fatal("the promoted replica should have the key written before the cut and not the one after")
	}
	if err := p.Rejoin(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.HealReplication(t.Context()); err != nil {
		t.Fatal(err)
	}
	set(t, w, "again")
	waitSynced(t, p)
	if err := p.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p.Master() != first || !exists(t, w, "again") || !exists(t, w, "before") {
		t.Fatal("the second failover lost keys the replica had copied")
	}
}

func waitSynced(t *testing.T, p *cluster.Pair) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
}

// set sets key through c, retrying while the node's connections are being
// re-established.
func set(t *testing.T, c *goredisv9.Client, key string) {
	t.Helper()
	var err error
	for range 20 {
		if err = c.Set(t.Context(), key, "1", 0).Err(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("SET %s: %v", key, err)
}

// exists reports whether key exists, through c, retrying as set does.
func exists(t *testing.T, c *goredisv9.Client, key string) bool {
	t.Helper()
	var err error
	for range 20 {
		var n int64
		if n, err = c.Exists(t.Context(), key).Result(); err == nil {
			return n == 1
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("EXISTS %s: %v", key, err)
	return false
}

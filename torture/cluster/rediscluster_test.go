package cluster_test

import (
	"testing"

	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/torture/cluster"
)

// A Redis Cluster is one lock node with one URL for every worker, reached
// without proxies; MoveSlot moves a slot with its keys, a key's TTL
// included, and every master agrees on the new owner at once.
func TestRedisCluster_oneNodeAndMoveSlot(t *testing.T) {
	t.Parallel()
	c, err := cluster.New(t.Context(), cluster.Options{RedisCluster: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Nodes() != 1 || c.Workers() != 0 || len(c.WorkerURLs(1)) != 1 || c.WorkerURLs(1)[0] != c.DirectURLs()[0] {
		t.Fatalf("Nodes() = %d, Workers() = %d, WorkerURLs(1) = %v, DirectURLs() = %v", c.Nodes(), c.Workers(), c.WorkerURLs(1), c.DirectURLs())
	}
	conn, err := goredis.NewURL(c.DirectURLs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if !conn.IsCluster() {
		t.Fatalf("%s is not a cluster URL", c.DirectURLs()[0])
	}
	const key = "moving"
	if _, err := conn.Do(t.Context(), "SET", key, "v", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	to := moveSlotAway(t, c, redlocktest.KeySlot(key))
	checkMoved(t, c, conn, key, to)
}

// checkMoved checks that to now owns the slot of key, holds the key with
// its TTL, that conn, a cluster client, reads the key there, and that
// moving the slot to its owner again does nothing.
func checkMoved(t *testing.T, c *cluster.Cluster, conn *goredis.Conn, key string, to *redlocktest.Node) {
	t.Helper()
	slot := redlocktest.KeySlot(key)
	if owner, err := c.RedisCluster().MasterOf(t.Context(), slot); err != nil || owner != to {
		t.Fatalf("after the move MasterOf = %v, %v; want node %d", owner, err, to.Index())
	}
	if ttl, err := to.Do(t.Context(), "PTTL", key); err != nil || ttl == "-1" || ttl == "-2" {
		t.Fatalf("PTTL on the new owner = %q, %v; want the key with its TTL", ttl, err)
	}
	if v, err := conn.Do(t.Context(), "GET", key); err != nil || v != "v" {
		t.Fatalf("GET through the cluster client after the move = %v, %v", v, err)
	}
	if moved, err := c.MoveSlot(t.Context(), slot, to); err != nil || moved != 0 {
		t.Fatalf("moving a slot to its owner = %d, %v; want nothing done", moved, err)
	}
}

// moveSlotAway moves slot, which holds one key, from its master to the next
// master of c, checks that the key moved, and returns the new owner.
func moveSlotAway(t *testing.T, c *cluster.Cluster, slot int) *redlocktest.Node {
	t.Helper()
	from, err := c.RedisCluster().MasterOf(t.Context(), slot)
	if err != nil {
		t.Fatal(err)
	}
	to := c.Masters()[(from.Index()+1)%len(c.Masters())]
	moved, err := c.MoveSlot(t.Context(), slot, to)
	if err != nil || moved != 1 {
		t.Fatalf("MoveSlot = %d, %v; want 1 key moved", moved, err)
	}
	return to
}

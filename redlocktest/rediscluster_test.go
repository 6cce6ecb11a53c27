package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// clusterInfo returns one field of the node's CLUSTER INFO.
func clusterInfo(t *testing.T, n *redlocktest.Node, field string) string {
	t.Helper()
	for line := range strings.Lines(do(t, n, "CLUSTER", "INFO")) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	t.Fatalf("node %d: no %s in CLUSTER INFO", n.Index(), field)
	return ""
}

// waitClusterState polls the node's cluster_state until it is want.
func waitClusterState(t *testing.T, n *redlocktest.Node, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for clusterInfo(t, n, "cluster_state") != want {
		if time.Now().After(deadline) {
			t.Fatalf("node %d: cluster_state is not %s after 10s", n.Index(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRedisCluster calls WaitRedisCluster and logs how long it took.
func waitRedisCluster(t *testing.T, c *redlocktest.Cluster, since time.Time, what string) {
	t.Helper()
	if err := c.WaitRedisCluster(t.Context()); err != nil {
		t.Fatalf("WaitRedisCluster %s: %v", what, err)
	}
	t.Logf("cluster_state:ok everywhere %v after %s", time.Since(since).Round(time.Millisecond), what)
}

// keyFor returns a key whose slot the node serves.
func keyFor(t *testing.T, c *redlocktest.Cluster, n *redlocktest.Node) string {
	t.Helper()
	for i := range 1000 {
		if key := "key-" + strconv.Itoa(i); c.NodeForKey(key) == n {
			return key
		}
	}
	t.Fatalf("node %d serves none of 1000 keys", n.Index())
	return ""
}

// otherNode returns a node of c that is not n.
func otherNode(c *redlocktest.Cluster, n *redlocktest.Node) *redlocktest.Node {
	return c.Node((n.Index() + 1) % len(c.Nodes()))
}

func TestKeySlot(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]int{
		"123456789": 12739, // CRC16/XMODEM's check value 0x31C3
		"foo":       12182,
		"":          0,
	} {
		if got := redlocktest.KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	for key, tag := range map[string]string{
		"{user1000}.following":  "user1000",
		"redlock:{job-42}:lock": "job-42",
		"foo{bar}{zap}":         "bar",
		"foo{{bar}}zap":         "{bar",
	} {
		if got, want := redlocktest.KeySlot(key), redlocktest.KeySlot(tag); got != want {
			t.Errorf("KeySlot(%q) = %d, want KeySlot(%q) = %d", key, got, tag, want)
		}
	}
}

func TestRedisClusterServesEverySlot(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	t.Logf("3-master Redis Cluster formed in %v", time.Since(begin).Round(time.Millisecond))
	nodes := c.Nodes()
	if len(nodes) != 3 {
		t.Fatalf("len(Nodes()) = %d, want 3 by default", len(nodes))
	}
	next := 0
	for i, n := range nodes {
		slots := n.Slots()
		if len(slots) != 1 || slots[0].First != next || slots[0].Last < slots[0].First {
			t.Fatalf("node %d: Slots() = %v, want one range from %d", i, slots, next)
		}
		next = slots[0].Last + 1
		for _, slot := range []int{slots[0].First, slots[0].Last} {
			if got := c.NodeForSlot(slot); got != n {
				t.Fatalf("NodeForSlot(%d) = node %d, want node %d", slot, got.Index(), i)
			}
		}
		checkClusterInfo(t, i, n)
	}
	if next != redlocktest.SlotCount {
		t.Fatalf("slots served up to %d, want %d", next, redlocktest.SlotCount)
	}
	if c.NodeForSlot(-1) != nil || c.NodeForSlot(redlocktest.SlotCount) != nil {
		t.Fatal("NodeForSlot out of range is not nil")
	}
	for _, n := range nodes {
		checkKeyOnOwner(t, c, n, keyFor(t, c, n))
	}
	// Redis is the reference for KeySlot, hash tags included.
	for _, key := range []string{"foo", "{user1000}.following", "redlock:{job-42}:lock", "foo{}{bar}", "foo{{bar}}zap", "{", "}{", "a{b}c{d}", "\xff{\x00}"} {
		expect(t, nodes[0], strconv.Itoa(redlocktest.KeySlot(key)), "CLUSTER", "KEYSLOT", key)
	}
}

// checkClusterInfo checks that node i, n, sees a healthy 3-master cluster,
// and keeps its cluster state in its directory.
func checkClusterInfo(t *testing.T, i int, n *redlocktest.Node) {
	t.Helper()
	for field, want := range map[string]string{"cluster_state": "ok", "cluster_slots_assigned": "16384", "cluster_slots_ok": "16384", "cluster_known_nodes": "3", "cluster_size": "3"} {
		if got := clusterInfo(t, n, field); got != want {
			t.Errorf("node %d: %s:%s, want %s", i, field, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(n.Dir(), "nodes.conf")); err != nil {
		t.Errorf("node %d: %v", i, err)
	}
}

// checkKeyOnOwner sets key on n, which serves its slot, reads it back, and
// checks that another node answers -MOVED to n.
func checkKeyOnOwner(t *testing.T, c *redlocktest.Cluster, n *redlocktest.Node, key string) {
	t.Helper()
	expect(t, n, "OK", "SET", key, "value")
	expect(t, n, "value", "GET", key)
	other := otherNode(c, n)
	_, err := other.Do(t.Context(), "GET", key)
	want := fmt.Sprintf("MOVED %d %s", redlocktest.KeySlot(key), n.Addr())
	var serverErr redlocktest.ServerError
	if !errors.As(err, &serverErr) || string(serverErr) != want {
		t.Fatalf("GET %s on node %d: err = %v, want %q", key, other.Index(), err, want)
	}
}

func TestRedisClusterMasterKillAndRestart(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	const key = "redlock:{job-42}:lock"
	n := c.NodeForKey(key)
	other := otherNode(c, n)
	expect(t, n, "OK", "SET", key, "token")
	port, slots := n.Port(), n.Slots()

	begin := time.Now()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	waitClusterState(t, other, "fail")
	t.Logf("cluster_state:fail on node %d %v after the kill", other.Index(), time.Since(begin).Round(time.Millisecond))
	var serverErr redlocktest.ServerError
	if _, err := other.Do(t.Context(), "GET", "foo"); !errors.As(err, &serverErr) || !strings.HasPrefix(string(serverErr), "CLUSTERDOWN") {
		t.Fatalf("GET on node %d with a master down: err = %v, want CLUSTERDOWN", other.Index(), err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err := c.WaitRedisCluster(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "cluster_state:fail") {
		t.Fatalf("WaitRedisCluster with a master down: err = %v, want a timeout that tells the master is down and so is the cluster", err)
	}

	begin = time.Now()
	if err := n.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitRedisCluster(t, c, begin, "the restart")
	if n.Port() != port || !slices.Equal(n.Slots(), slots) || c.NodeForKey(key) != n {
		t.Fatalf("after Restart: port %d, slots %v; want %d, %v", n.Port(), n.Slots(), port, slots)
	}
	// Without persistence the master comes back empty, but with its slots.
	if reply, err := n.Do(t.Context(), "GET", key); !errors.Is(err, redlocktest.ErrNil) {
		t.Fatalf("GET %s after the restart = %q, %v; want nil", key, reply, err)
	}
	checkKeyOnOwner(t, c, n, key)
}

func TestRedisClusterPauseResume(t *testing.T) {
	t.Parallel()
	// A shorter cluster-node-timeout than the default 1s makes the nodes
	// see the paused master fail, and forgive it, sooner.
	c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, Config: []string{"cluster-node-timeout 500"}})
	n := c.Node(1)
	other := otherNode(c, n)
	begin := time.Now()
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	waitClusterState(t, other, "fail")
	t.Logf("cluster_state:fail on node %d %v after the pause", other.Index(), time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	waitRedisCluster(t, c, begin, "the resume")
	checkKeyOnOwner(t, c, n, keyFor(t, c, n))
}

func TestRedisClusterReusesDirWithData(t *testing.T) {
	t.Parallel()
	opts := redlocktest.Options{RedisCluster: true, Nodes: 2, AppendFsyncAlways: true, Password: "secret", Dir: t.TempDir()}
	c, err := redlocktest.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	const key = "redlock:{job-42}:lock"
	n := c.NodeForKey(key)
	expect(t, n, "OK", "SET", key, "token")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// New ports, the same directories: the nodes forget the old cluster,
	// load their keys and form a new one.
	begin := time.Now()
	c = redlocktest.Start(t, opts)
	t.Logf("Redis Cluster formed again in %v", time.Since(begin).Round(time.Millisecond))
	n = c.NodeForKey(key)
	expect(t, n, "token", "GET", key)
	checkKeyOnOwner(t, c, n, key)
	if got := clusterInfo(t, n, "cluster_known_nodes"); got != "2" {
		t.Fatalf("cluster_known_nodes:%s, want 2", got)
	}
}

func TestWaitRedisClusterOnIndependentNodes(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	if err := c.WaitRedisCluster(t.Context()); err == nil {
		t.Fatal("WaitRedisCluster on independent nodes succeeded")
	}
	if n := c.Node(0); n.Slots() != nil || c.NodeForKey("foo") != nil {
		t.Fatalf("independent node: Slots() = %v, NodeForKey = %v; want nil", n.Slots(), c.NodeForKey("foo"))
	}
}

func TestRedisClusterReplicasAndFailover(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	// Unmarked: no restart markers beside the test's key.
	c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, ClusterReplicas: 1, Unmarked: true})
	t.Logf("3 masters with a replica each formed in %v", time.Since(begin).Round(time.Millisecond))
	nodes := c.Nodes()
	if len(nodes) != 6 {
		t.Fatalf("len(Nodes()) = %d, want 3 masters and 3 replicas", len(nodes))
	}
	for i, master := range nodes[:3] {
		replica := nodes[3+i]
		if replica.Slots() != nil || replica.ID() == "" || replica.ID() == master.ID() {
			t.Fatalf("replica %d: Slots() = %v, ID() = %q, master's ID %q", 3+i, replica.Slots(), replica.ID(), master.ID())
		}
		expect(t, replica, replica.ID(), "CLUSTER", "MYID")
		checkReplicas(t, c, master, replica)
	}
	if got := clusterInfo(t, nodes[0], "cluster_known_nodes"); got != "6" {
		t.Fatalf("cluster_known_nodes:%s, want 6", got)
	}

	const key = "redlock:{job-42}:lock"
	slot := redlocktest.KeySlot(key)
	master := c.NodeForKey(key)
	replica := nodes[3+master.Index()]
	expect(t, master, "OK", "SET", key, "token")
	expect(t, master, "1", "WAIT", "1", "2000") // the replica has the key
	expect(t, replica, "1", "DBSIZE")

	begin = time.Now()
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	promoted, err := c.WaitPromoted(t.Context(), slot, master)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replica promoted %v after the master was killed", time.Since(begin).Round(time.Millisecond))
	if promoted != replica {
		t.Fatalf("WaitPromoted = node %d, want node %d", promoted.Index(), replica.Index())
	}
	checkMasterOf(t, c, slot, replica)
	if c.NodeForSlot(slot) != master {
		t.Fatalf("NodeForSlot(%d) no longer names the master the slot was given", slot)
	}
	expect(t, replica, "token", "GET", key)

	// The old master comes back empty and replicates the promoted replica.
	begin = time.Now()
	if err := master.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitRedisCluster(t, c, begin, "the old master's restart")
	checkReplicas(t, c, replica, master)
	expect(t, master, "1", "DBSIZE") // the key, by replication

	// A manual failover gives the slots back, and the cluster is whole.
	begin = time.Now()
	if err := c.Failover(t.Context(), master); err != nil {
		t.Fatal(err)
	}
	t.Logf("manual failover took %v", time.Since(begin).Round(time.Millisecond))
	checkMasterOf(t, c, slot, master)
	waitRedisCluster(t, c, begin, "the manual failover")
	checkReplicas(t, c, master, replica)
	expect(t, master, "token", "GET", key)
	if err := c.Failover(t.Context(), master); err == nil {
		t.Fatal("Failover on a master succeeded")
	}
}

// checkReplicas checks that replica is master's one replica.
func checkReplicas(t *testing.T, c *redlocktest.Cluster, master, replica *redlocktest.Node) {
	t.Helper()
	replicas, err := c.ReplicasOf(t.Context(), master)
	if err != nil || len(replicas) != 1 || replicas[0] != replica {
		t.Fatalf("ReplicasOf(node %d) = %v, %v; want node %d", master.Index(), replicas, err, replica.Index())
	}
}

// checkMasterOf checks that the running nodes agree master serves slot.
func checkMasterOf(t *testing.T, c *redlocktest.Cluster, slot int, master *redlocktest.Node) {
	t.Helper()
	got, err := c.MasterOf(t.Context(), slot)
	if err != nil || got != master {
		t.Fatalf("MasterOf(%d) = %v, %v; want node %d", slot, got, err, master.Index())
	}
}

func TestClusterReplicasNeedARedisCluster(t *testing.T) {
	t.Parallel()
	if _, err := redlocktest.New(t.Context(), redlocktest.Options{Nodes: 1, ClusterReplicas: 1}); err == nil {
		t.Fatal("ClusterReplicas without RedisCluster accepted")
	}
	if _, err := redlocktest.New(t.Context(), redlocktest.Options{RedisCluster: true, ClusterReplicas: -1}); err == nil {
		t.Fatal("ClusterReplicas -1 accepted")
	}
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	if _, err := c.MasterOf(t.Context(), 0); err == nil {
		t.Fatal("MasterOf on an independent node succeeded")
	}
	if _, err := c.ReplicasOf(t.Context(), c.Node(0)); err == nil {
		t.Fatal("ReplicasOf on an independent node succeeded")
	}
	if _, err := c.WaitPromoted(t.Context(), 0, c.Node(0)); err == nil {
		t.Fatal("WaitPromoted on an independent node succeeded")
	}
}

// A paused replica still receives its master's writes (the kernel buffers
// them); a paused replica whose link the master closed misses them, and
// loses them to the failover when it is promoted.
func TestRedisClusterPromotedReplicaMissesWrites(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, ClusterReplicas: 1})
	master := c.Node(0)
	replica := c.Node(3)
	buffered, missed := keyFor(t, c, master), "{"+keyFor(t, c, master)+"}.missed"
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	expect(t, master, "OK", "SET", buffered, "1")
	expect(t, master, "1", "CLIENT", "KILL", "TYPE", "replica")
	expect(t, master, "OK", "SET", missed, "1")
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	promoted, err := c.WaitPromoted(t.Context(), redlocktest.KeySlot(buffered), master)
	if err != nil {
		t.Fatal(err)
	}
	if promoted != replica {
		t.Fatalf("WaitPromoted = node %d, want node %d", promoted.Index(), replica.Index())
	}
	expect(t, replica, "1", "GET", buffered)
	if reply, err := replica.Do(t.Context(), "GET", missed); !errors.Is(err, redlocktest.ErrNil) {
		t.Fatalf("GET %s on the promoted replica = %q, %v; want nil", missed, reply, err)
	}
}

// The package documentation's Redis Cluster example, step by step: a
// master killed, its replica promoted, the old master restarted, and at
// once a Failover back to it. Failover waits for the restarted node to be
// in sync with its master: a CLUSTER FAILOVER sent while it still copied
// the data was accepted and timed out on its own, and Failover failed
// after 15 s in most runs.
func TestRedisClusterFailoverRightAfterARestart(t *testing.T) {
	c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, ClusterReplicas: 1})
	slot := redlocktest.KeySlot("orders:{42}")
	master := c.NodeForSlot(slot)
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitPromoted(t.Context(), slot, master); err != nil {
		t.Fatal(err)
	}
	if err := master.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Failover(t.Context(), master); err != nil {
		t.Fatal(err)
	}
	checkMasterOf(t, c, slot, master)
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"
	rueidisclient "github.com/redis/rueidis"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// clusterAdapters build one Conn over a whole Redis Cluster, from its seed
// addresses, with each client library.
var clusterAdapters = []struct {
	name string
	conn func(t *testing.T, seeds []string) redlock.Conn
}{
	{"goredis", func(t *testing.T, seeds []string) redlock.Conn {
		return goredis.NewOwned(goredisv9.NewClusterClient(&goredisv9.ClusterOptions{Addrs: seeds, MaxRetries: -1}))
	}},
	{"rueidis", func(t *testing.T, seeds []string) redlock.Conn {
		c, err := rueidisclient.NewClient(rueidisclient.ClientOption{InitAddress: seeds, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		return rueidis.NewOwned(c)
	}},
}

// clusterClient returns a Client whose one node is the whole Redis Cluster
// cluster. redlocktest marked every slot ready, unless the cluster was
// started Unmarked: MarkReady, which marks the 16,384 slots one request
// each, is left to the tests of it and of unmarked clusters.
func clusterClient(t *testing.T, cluster *redlocktest.Cluster, conn func(*testing.T, []string) redlock.Conn, opts *redlock.Options) *redlock.Client {
	t.Helper()
	c, err := redlock.New([]redlock.Conn{conn(t, cluster.Addrs())}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A cluster client learns the slots and dials the masters on its
	// first requests, which may pass the node timeout under load: List
	// asks every master, until they all answer.
	eventually(t, "every master of the cluster answering", func() bool {
		_, err := c.List(bg, "")
		return err == nil
	})
	return c
}

// WaitReplicas over a Redis Cluster's Conn fails at New: a cluster's
// client cannot send WAIT to the master that ran the script, and every
// acquisition would fail.
func TestRedisCluster_waitReplicasRefused(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			conn := a.conn(t, cluster.Addrs())
			defer conn.Close()
			if _, err := redlock.New([]redlock.Conn{conn}, &redlock.Options{WaitReplicas: 1}); !errors.Is(err, redlock.ErrInvalidOptions) {
				t.Errorf("New with WaitReplicas over a Redis Cluster: %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// A Redis Cluster as one node: locks on keys of every shape (hash tags,
// stray braces) with fencing, refusal, extension, inspection, release and a
// waiter in another client woken by the release, over both adapters.
func TestRedisCluster_locksWithEveryFeature(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond}
			c := clusterClient(t, cluster, a.conn, opts)
			for _, key := range []string{"job", "user:{42}:cart", "a}b", "{}x", "{"} {
				lockOnCluster(t, c, key)
			}
			waiter, err := redlock.New([]redlock.Conn{a.conn(t, cluster.Addrs())},
				&redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond, Retry: redlock.ExponentialJitter(time.Minute, time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			defer waiter.Close()
			// Held until its release below, past the waiter's setup.
			lock, err := c.Acquire(bg, "wake", redlock.WithTTL(20*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			got := acquireInBackground(waiter, "wake")
			awaitReleaseChannels(t, cluster, map[*redlocktest.Node][]string{cluster.NodeForKey("wake"): {redlock.ReleaseChannel("wake", true)}})
			if err := lock.Release(bg); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.err != nil {
				t.Fatalf("a waiter in another client was not woken by the release: %v", r.err)
			} else {
				r.lock.Release(bg)
			}
		})
	}
}

// lockOnCluster takes, checks, extends and releases the lock named key.
func lockOnCluster(t *testing.T, c *redlock.Client, key string) {
	t.Helper()
	lock, err := c.Acquire(bg, key)
	if err != nil {
		t.Fatalf("%q: %v", key, err)
	}
	if _, err := c.TryAcquire(bg, key); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Errorf("%q: a held lock granted again: %v", key, err)
	}
	states, err := c.Inspect(bg, key)
	if err != nil || states[0].Holder != lock.Token() || states[0].Fence != lock.Fence() || states[0].Err != nil {
		t.Errorf("%q: Inspect %+v, %v; want the holder and its token", key, states, err)
	}
	if err := lock.Extend(bg, 5*time.Second); err != nil {
		t.Errorf("%q: extend: %v", key, err)
	}
	if err := lock.Release(bg); err != nil {
		t.Errorf("%q: release: %v", key, err)
	}
	again, err := c.Acquire(bg, key)
	if err != nil {
		t.Fatalf("%q: after release: %v", key, err)
	}
	if again.Fence() <= lock.Fence() {
		t.Errorf("%q: fence %d after %d", key, again.Fence(), lock.Fence())
	}
	again.Release(bg)
}

// A shard master that restarts empty sits out the recovery delay for the
// keys of its slots, while the other masters' keys lock as before.
func TestRedisCluster_restartedShardMasterSitsOut(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond, RecoveryDelay: 5 * time.Second}
	c := clusterClient(t, cluster, clusterAdapters[0].conn, opts)
	const key = "job"
	held, err := c.Acquire(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)
	owner := cluster.NodeForKey(key)
	if err := owner.Restart(bg); err != nil {
		t.Fatal(err)
	}
	if err := cluster.WaitRedisCluster(bg); err != nil {
		t.Fatal(err)
	}
	_, err = retryingOnCluster(c, key)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Nodes[0].Outcome != redlock.OutcomeRecovering {
		t.Fatalf("acquire on the restarted shard: %v, want it recovering", err)
	}
	var elsewhere string
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		if cluster.NodeForKey(k) != owner {
			elsewhere = k
			break
		}
	}
	lock, err := c.Acquire(bg, elsewhere)
	if err != nil {
		t.Fatalf("a key of another shard: %v", err)
	}
	lock.Release(bg)
}

// retryingOnCluster makes an attempt, and more while the node's answer is a
// connection's error (the cluster settling after a restart), for up to 10 s.
func retryingOnCluster(c *redlock.Client, key string) (*redlock.Lock, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		lock, err := c.TryAcquire(bg, key)
		var qe *redlock.QuorumError
		if err == nil || !errors.As(err, &qe) || qe.Nodes[0].Outcome != redlock.OutcomeError || time.Now().After(deadline) {
			return lock, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Concurrent calls on keys of many slots share script calls only within a
// slot: no request fails with CROSSSLOT, over both adapters.
func TestRedisCluster_concurrentKeysOfManySlots(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			c := clusterClient(t, cluster, a.conn, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond})
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 50 {
						// Two keys per slot at times: the same tag.
						key := fmt.Sprintf("k%d-{%d}", i, (g*50+i)%40)
						lock, err := c.Acquire(bg, key)
						if err != nil {
							errs <- fmt.Errorf("%s: %w", key, err)
							return
						}
						if err := lock.Release(bg); err != nil {
							errs <- fmt.Errorf("%s: release: %w", key, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// A slot that moves to another master while a lock in it is held (MIGRATE,
// with MOVED and ASK redirections on the way) keeps the lock: the new
// master holds the key, so nobody else is granted it; the slot then sits
// out the recovery delay on its new master (another process), and locks
// again after it.
func TestRedisCluster_reshardedSlotKeepsItsLock(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	opts := &redlock.Options{TTL: 5 * time.Second, NodeTimeout: 500 * time.Millisecond, RecoveryDelay: 6 * time.Second}
	holder := clusterClient(t, cluster, clusterAdapters[0].conn, opts)
	const key = "moving"
	held, err := holder.Acquire(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	from := cluster.NodeForKey(key)
	to := cluster.Nodes()[(from.Index()+1)%len(cluster.Nodes())]
	migrateSlot(t, redlocktest.KeySlot(key), from, to)
	if v := do(t, to, "GET", key); v != held.Token() {
		t.Fatalf("the new master holds %q after the move, want the lock's token", v)
	}

	other, err := redlock.New([]redlock.Conn{clusterAdapters[1].conn(t, cluster.Addrs())}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if lock, err := retryingOnCluster(other, key); err == nil {
		lock.Release(bg)
		t.Fatal("a lock held while its slot moved was granted again")
	}
	if err := held.Extend(bg, 5*time.Second); err != nil {
		t.Errorf("extend after the slot moved: %v", err)
	}
	if err := held.Release(bg); err != nil {
		t.Errorf("release after the slot moved: %v", err)
	}
	ctx, cancel := context.WithTimeout(bg, 3*opts.RecoveryDelay)
	defer cancel()
	lock, err := other.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("the moved slot never locked again: %v", err)
	}
	lock.Release(bg)
}

// migrateSlot moves slot, and its keys, from one master to another, as
// redis-cli --cluster reshard does.
func migrateSlot(t *testing.T, slot int, from, to *redlocktest.Node) {
	t.Helper()
	s := strconv.Itoa(slot)
	fromID, toID := do(t, from, "CLUSTER", "MYID"), do(t, to, "CLUSTER", "MYID")
	do(t, to, "CLUSTER", "SETSLOT", s, "IMPORTING", fromID)
	do(t, from, "CLUSTER", "SETSLOT", s, "MIGRATING", toID)
	for {
		keys := strings.Fields(do(t, from, "CLUSTER", "GETKEYSINSLOT", s, "100"))
		if len(keys) == 0 {
			break
		}
		args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port()), "", "0", "5000", "KEYS"}, keys...)
		do(t, from, args...)
	}
	for _, n := range []*redlocktest.Node{to, from} {
		do(t, n, "CLUSTER", "SETSLOT", s, "NODE", toID)
	}
}

// Redlock over three Redis Clusters, each one node: a majority of clusters
// grants the lock, a cluster that is down costs one vote, and fencing
// tokens keep increasing.
func TestRedisCluster_redlockOverThreeClusters(t *testing.T) {
	t.Parallel()
	var conns []redlock.Conn
	var clusters []*redlocktest.Cluster
	for range 3 {
		c := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
		clusters = append(clusters, c)
		conns = append(conns, clusterAdapters[len(clusters)%2].conn(t, c.Addrs()))
	}
	c, err := redlock.New(conns, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first, err := c.Acquire(bg, "job")
	if err != nil {
		t.Fatal(err)
	}
	first.Release(bg)
	for _, n := range clusters[2].Nodes() {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	second, err := c.Acquire(bg, "job")
	if err != nil {
		t.Fatalf("two clusters of three up: %v", err)
	}
	defer second.Release(bg)
	if second.Fence() <= first.Fence() {
		t.Errorf("fence %d after %d", second.Fence(), first.Fence())
	}
	if got := second.Nodes()[2].Outcome; got == redlock.OutcomeOK {
		t.Errorf("the cluster that is down reported %v", second.Nodes()[2])
	}
}

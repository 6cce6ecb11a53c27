package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// List finds, over every node, the held locks, permits and readers whose
// names begin with a prefix, with their holders, TTL and waiting clients;
// it skips other libraries' keys and the user's own, and walks a key
// space larger than one SCAN step.
func TestList(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		opts := &redlock.Options{TTL: 5 * time.Second, NodeTimeout: 300 * time.Millisecond, KeyPrefix: "app:", Owner: "lister-test"}
		client := newClient(t, cluster, a, opts)
		for _, n := range cluster.Nodes() {
			do(t, n, "EVAL", `for i = 1, 1000 do redis.call("SET", "app:filler:" .. i, "x") end`, "0")
			do(t, n, "SET", "app:foreign", "redsync-like-token", "PX", "60000")
			do(t, n, "HSET", "app:user-hash", "f", "v")
		}
		takeListedLocks(t, client)
		waiter := newClient(t, cluster, a, opts)
		ctx, cancel := context.WithCancel(bg)
		defer cancel()
		go waiter.Acquire(ctx, "orders")

		held := waitForListed(t, client, "", func(h []redlock.HeldLock) bool { return len(h) == 3 && h[1].Waiting > 0 })
		wantListed(t, held)
		only, err := client.List(bg, "ord")
		if err != nil || len(only) != 1 || only[0].Key != "orders" {
			t.Errorf("List(\"ord\") = %+v, %v; want orders alone", only, err)
		}
		if none, err := client.List(bg, "*"); err != nil || len(none) != 0 {
			t.Errorf("List(\"*\") = %+v, %v; want none: the prefix is not a pattern", none, err)
		}
	})
}

// takeListedLocks takes, through client, the lock orders, a permit of sem
// and two readers of doc: three locks.
func takeListedLocks(t *testing.T, client *redlock.Client) {
	t.Helper()
	for _, c := range []struct {
		name string
		opts []redlock.LockOption
	}{
		{"orders", []redlock.LockOption{redlock.WithOwner("orders-owner")}},
		{"sem", []redlock.LockOption{redlock.WithLimit(2)}},
		{"doc", []redlock.LockOption{redlock.WithShared(), redlock.WithOwner("reader-1")}},
		{"doc", []redlock.LockOption{redlock.WithShared(), redlock.WithOwner("reader-2")}},
	} {
		lock, err := client.TryAcquire(bg, c.name, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lock.Release(bg) })
	}
}

// waitForListed lists prefix through client until ok accepts the list.
func waitForListed(t *testing.T, client *redlock.Client, prefix string, ok func([]redlock.HeldLock) bool) []redlock.HeldLock {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		held, err := client.List(bg, prefix)
		if err == nil && ok(held) {
			return held
		}
		if time.Now().After(deadline) {
			t.Fatalf("List(%q) = %+v, %v", prefix, held, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantListed checks the list of the locks takeListedLocks took, with a
// client waiting for orders. Each acquisition returned at a quorum, and
// the waiter's attempts may reach a node before the grant of orders: a
// lock is held on a quorum, not necessarily on every node.
func wantListed(t *testing.T, held []redlock.HeldLock) {
	t.Helper()
	keys := []string{}
	for _, h := range held {
		keys = append(keys, h.Key)
		if h.Nodes < 2 || h.Nodes > 3 || h.Answered != 3 || h.All != 3 || !h.Quorum || h.TTL <= 0 || h.TTL > 5*time.Second {
			t.Errorf("%s: %+v", h.Key, h)
		}
	}
	if len(keys) != 3 || keys[0] != "doc" || keys[1] != "orders" || !slices.Contains([]string{"sem:permit:1", "sem:permit:2"}, keys[2]) {
		t.Fatalf("listed %q", keys)
	}
	doc, orders, permit := held[0], held[1], held[2]
	if !doc.Shared || len(doc.Grants) != 2 || !slices.ContainsFunc(doc.Grants, func(g redlock.Grant) bool { return g.Owner == "reader-1" }) ||
		!slices.ContainsFunc(doc.Grants, func(g redlock.Grant) bool { return g.Owner == "reader-2" }) {
		t.Errorf("doc: %+v", doc)
	}
	if orders.Shared || len(orders.Grants) != 1 || orders.Grants[0].Owner != "orders-owner" || orders.Grants[0].Since.IsZero() || orders.Waiting < 1 {
		t.Errorf("orders: %+v", orders)
	}
	if permit.Semaphore != "sem" || permit.Permit < 1 || permit.Grants[0].Owner != "lister-test" {
		t.Errorf("permit: %+v", permit)
	}
}

// List says which node it could not scan, and still lists what the
// others hold.
func TestList_nodeDown(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 300 * time.Millisecond})
		lock, err := client.TryAcquire(bg, "k")
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release(bg)
		if err := cluster.Node(2).Kill(); err != nil {
			t.Fatal(err)
		}
		held, err := client.List(bg, "")
		if !errors.Is(err, redlock.ErrListIncomplete) || len(held) != 1 || held[0].Answered != 2 || held[0].Key != "k" {
			t.Errorf("List with a node down = %+v, %v; want k, 2 nodes answered, ErrListIncomplete", held, err)
		}
	})
}

// Over a Redis Cluster, List scans every master.
func TestList_redisCluster(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			c := clusterClient(t, cluster, a.conn, &redlock.Options{TTL: 5 * time.Second, NodeTimeout: 500 * time.Millisecond})
			masters := map[*redlocktest.Node]bool{}
			var names []string
			for i := 0; len(masters) < 3 && i < 100; i++ {
				name := fmt.Sprintf("%s-job-%d", a.name, i)
				if n := cluster.NodeForKey(name); !masters[n] {
					masters[n] = true
					names = append(names, name)
				}
			}
			for _, name := range names {
				lock, err := c.TryAcquire(bg, name)
				if err != nil {
					t.Fatal(err)
				}
				defer lock.Release(bg)
			}
			held, err := c.List(bg, a.name+"-job-")
			if err != nil || len(held) != len(names) {
				t.Fatalf("List = %+v, %v; want %q, on %d masters", held, err, names, len(masters))
			}
			for i, h := range held {
				if h.Key != slices.Sorted(slices.Values(names))[i] || !h.Quorum {
					t.Errorf("lock %d: %+v", i, h)
				}
			}
		})
	}
}

// A prefix that is not valid UTF-8 finds the keys that begin with it.
func TestList_bytePrefix(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	if _, err := client.Acquire(bg, "bin:\xff\xfe"); err != nil {
		t.Fatal(err)
	}
	held, err := client.List(bg, "bin:\xff")
	if err != nil || len(held) != 1 || held[0].Key != "bin:\xff\xfe" {
		t.Errorf("List(%q) = %+v, %v; want the one key", "bin:\xff", held, err)
	}
}

// List, Inspect and Check answer while every node pauses its writers
// (CLIENT PAUSE WRITE, as an operator does before a failover): they run
// no-writes functions, which a pause of writes lets through.
func TestList_whileTheNodesPauseWrites(t *testing.T) {
	needs(t, redlocktest.Functions) // reads by functions, which a pause lets through
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, &redlock.Options{TTL: time.Minute, NodeTimeout: 300 * time.Millisecond, RecoveryDelay: time.Minute})
		lock, err := client.TryAcquire(bg, "paused")
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release(bg)
		waitForKey(t, cluster, lock.Key(), lock.Token())
		for _, n := range cluster.Nodes() {
			do(t, n, "CLIENT", "PAUSE", "60000", "WRITE")
			t.Cleanup(func() { n.Do(bg, "CLIENT", "UNPAUSE") })
		}
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		held, err := client.List(ctx, "")
		if err != nil || len(held) != 1 || held[0].Key != "paused" || held[0].Answered != 3 {
			t.Errorf("List while the nodes pause writes = %+v, %v; want paused, held on 3 nodes", held, err)
		}
		states, err := client.Inspect(ctx, "paused")
		if err != nil || len(states) != 3 {
			t.Errorf("Inspect while the nodes pause writes = %+v, %v; want 3 nodes", states, err)
		}
		for _, st := range states {
			if st.Err != nil || st.Holder != lock.Token() {
				t.Errorf("Inspect while the nodes pause writes: %+v; want held by %s", st, lock.Token())
			}
		}
		if r, err := client.Check(ctx, "paused", lock.Token()); err != nil || !r.Current {
			t.Errorf("Check while the nodes pause writes = %+v, %v; want current", r, err)
		}
	})
}

// List, Inspect and Check answer while every master of a Redis Cluster
// pauses writes: on a cluster, where the library runs no functions, their
// scripts go by EVALSHA_RO, which the pause does not hold back. Before,
// List failed ("context deadline exceeded") and Inspect waited for the
// pause's end.
func TestList_whileARedisClusterPausesWrites(t *testing.T) {
	needs(t, redlocktest.Functions) // EVALSHA_RO
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, RedisCluster: true})
	url := cluster.URLs()[0] + "?cluster=1&addr=" + cluster.Addrs()[1]
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, []string{url}, &redlock.Options{TTL: 20 * time.Second, NodeTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		key := "paused-" + d.name
		lock, err := client.TryAcquire(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range cluster.Nodes() {
			do(t, n, "CLIENT", "PAUSE", "60000", "WRITE")
		}
		defer func() {
			for _, n := range cluster.Nodes() {
				n.Do(bg, "CLIENT", "UNPAUSE")
			}
			lock.Release(bg)
		}()
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		held, err := client.List(ctx, "paused-")
		if err != nil || len(held) != 1 || held[0].Key != key {
			t.Errorf("List while the cluster pauses writes = %+v, %v; want %s", held, err, key)
		}
		states, err := client.Inspect(ctx, key)
		if err != nil || len(states) != 1 || states[0].Holder != lock.Token() {
			t.Errorf("Inspect while the cluster pauses writes = %+v, %v; want held by %s", states, err, lock.Token())
		}
		if r, err := client.Check(ctx, key, lock.Token()); err != nil || !r.Current {
			t.Errorf("Check while the cluster pauses writes = %+v, %v; want current", r, err)
		}
	})
}

package redlock_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Waiters on a Redis Cluster node wait far longer between attempts than
// their deadline: only a release announcement can get them the lock in
// time, so a missed wake-up fails the test instead of slowing it.
const (
	shardWaitRetry    = 20 * time.Second
	shardWaitDeadline = 10 * time.Second
	// shardSubscribed bounds the wait for a waiter's subscription to show
	// on the masters (it starts after the waiter's first refusal, or after
	// a lost subscription is taken up again).
	shardSubscribed = 5 * time.Second
)

// A waiter blocked in Acquire on a Redis Cluster node subscribes to its
// key's release channel by SSUBSCRIBE on the master of the key's slot, a
// shard channel of that slot, and nothing by SUBSCRIBE; the release,
// announced by SPUBLISH, wakes it. Over both adapters.
func TestRedisCluster_waiterWokenByShardedPubSub(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			holder := clusterClient(t, cluster, a.conn, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond})
			waiter := shardWaiter(t, cluster, a.conn, nil)
			key := "sharded-wake-" + a.name
			channel := redlock.ReleaseChannel(key, true)
			if redlocktest.KeySlot(channel) != redlocktest.KeySlot(key) {
				t.Fatalf("release channel %q is in slot %d, its key in slot %d", channel, redlocktest.KeySlot(channel), redlocktest.KeySlot(key))
			}
			lock, err := holder.Acquire(bg, key)
			if err != nil {
				t.Fatal(err)
			}
			got := acquireInBackground(waiter, key)
			owner := cluster.NodeForKey(key)
			awaitShardChannels(t, cluster, map[*redlocktest.Node][]string{owner: {channel}})
			broadcasts := publishesSent(t, owner)
			if err := lock.Release(bg); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.err != nil {
				t.Fatalf("the waiter was not woken by the release: %v", r.err)
			} else {
				r.lock.Release(bg)
			}
			if sent := publishesSent(t, owner) - broadcasts; sent != 0 {
				t.Errorf("the release sent %d PUBLISH messages over the cluster bus, want none", sent)
			}
		})
	}
}

// publishesSent returns how many PUBLISH messages n sent over its cluster
// bus (CLUSTER INFO's cluster_stats_messages_publish_sent, absent before
// the first): one to every other node per PUBLISH.
func publishesSent(t *testing.T, n *redlocktest.Node) int {
	t.Helper()
	for _, line := range strings.Split(do(t, n, "CLUSTER", "INFO"), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_stats_messages_publish_sent:"); ok {
			sent, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("CLUSTER INFO: %q", line)
			}
			return sent
		}
	}
	return 0
}

// Waiters on keys of three slots, one on each master, subscribe at once,
// each channel on its own master, and each release wakes its waiter.
func TestRedisCluster_waitersOnEveryMasterWoken(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			holder := clusterClient(t, cluster, a.conn, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond})
			waiter := shardWaiter(t, cluster, a.conn, nil)
			keys := keyPerMaster(cluster, "sharded-"+a.name+"-")
			want := map[*redlocktest.Node][]string{}
			var locks []*redlock.Lock
			var results []<-chan acquired
			for _, key := range keys {
				lock, err := holder.Acquire(bg, key)
				if err != nil {
					t.Fatal(err)
				}
				locks = append(locks, lock)
				results = append(results, acquireInBackground(waiter, key))
				want[cluster.NodeForKey(key)] = []string{redlock.ReleaseChannel(key, true)}
			}
			awaitShardChannels(t, cluster, want)
			for _, lock := range locks {
				if err := lock.Release(bg); err != nil {
					t.Fatal(err)
				}
			}
			for i, got := range results {
				if r := <-got; r.err != nil {
					t.Errorf("%s: the waiter was not woken by the release: %v", keys[i], r.err)
				} else {
					r.lock.Release(bg)
				}
			}
		})
	}
}

// A subscription lost while a waiter waits is taken up again, and the
// release still wakes the waiter: after its connection was killed, and after
// its slot moved to another master (which ends it with sunsubscribe), where
// the waiter subscribes again. Over both adapters.
func TestRedisCluster_waiterResubscribesAfterALostSubscription(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	// The slot that moves would sit out the recovery delay on its new
	// master (and refuse MarkReady); this test is about wake-ups.
	opts := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond, DisableQuarantine: true}
	for _, a := range clusterAdapters {
		for _, loss := range []string{"connection killed", "slot moved"} {
			t.Run(a.name+"/"+loss, func(t *testing.T) {
				holder, err := redlock.New([]redlock.Conn{a.conn(t, cluster.Addrs())}, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				waiter := shardWaiter(t, cluster, a.conn, opts)
				key := "resubscribed-" + a.name + "-" + strings.Fields(loss)[1]
				channel := redlock.ReleaseChannel(key, true)
				lock, err := holder.Acquire(bg, key)
				if err != nil {
					t.Fatal(err)
				}
				got := acquireInBackground(waiter, key)
				from := cluster.NodeForKey(key)
				awaitShardChannels(t, cluster, map[*redlocktest.Node][]string{from: {channel}})
				to := from
				if loss == "slot moved" {
					to = cluster.Nodes()[(from.Index()+1)%len(cluster.Nodes())]
					migrateSlot(t, redlocktest.KeySlot(key), from, to)
					if listed := pubsubList(t, from, "SHARDCHANNELS"); slices.Contains(listed, channel) {
						t.Fatalf("%s still lists %q after its slot moved", from.Addr(), channel)
					}
				} else {
					killed := shardSubscribers(t, from)
					if len(killed) == 0 {
						t.Fatalf("no connection of %s holds a shard channel subscription", from.Addr())
					}
					for _, id := range killed {
						do(t, from, "CLIENT", "KILL", "ID", id)
					}
					awaitNewShardSubscriber(t, from, killed)
				}
				awaitShardChannels(t, cluster, map[*redlocktest.Node][]string{to: {channel}})
				if err := lock.Release(bg); err != nil {
					t.Fatal(err)
				}
				if r := <-got; r.err != nil {
					t.Fatalf("the waiter was not woken by the release: %v", r.err)
				} else {
					r.lock.Release(bg)
				}
			})
		}
	}
}

// A Client over a Redis Cluster and an independent server names a key's
// release channel alike on both, with the cluster's slot tag: the cluster
// announces by SPUBLISH, heard by SSUBSCRIBE on the key's master, the
// server by PUBLISH, heard by SUBSCRIBE; a waiter needs both (the quorum
// of two nodes) to wake.
func TestRedisCluster_mixedWithAServerWakesByBoth(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	server := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	for i, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			conns := func() []redlock.Conn {
				return append([]redlock.Conn{a.conn(t, cluster.Addrs())}, adapters[i].conns(t, server.Addrs())...)
			}
			opts := redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond}
			holder, err := redlock.New(conns(), &opts)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			if err := holder.MarkReady(bg, false); err != nil {
				t.Fatal(err)
			}
			opts.Retry = redlock.Jittered(shardWaitRetry, shardWaitRetry)
			waiter, err := redlock.New(conns(), &opts)
			if err != nil {
				t.Fatal(err)
			}
			defer waiter.Close()
			key := "mixed-wake-" + a.name
			channel := redlock.ReleaseChannel(key, true)
			lock, err := holder.Acquire(bg, key)
			if err != nil {
				t.Fatal(err)
			}
			got := acquireInBackground(waiter, key)
			awaitShardChannels(t, cluster, map[*redlocktest.Node][]string{cluster.NodeForKey(key): {channel}})
			awaitClassicChannel(t, server, channel)
			if err := lock.Release(bg); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.err != nil {
				t.Fatalf("the waiter was not woken by the release: %v", r.err)
			} else {
				r.lock.Release(bg)
			}
		})
	}
}

// A Redis Cluster without sharded pub/sub (SSUBSCRIBE and SPUBLISH
// unknown, as before Redis 7.0) still wakes waiters: releases fall back to
// PUBLISH, and subscriptions to SUBSCRIBE once SSUBSCRIBE was refused.
func TestRedisCluster_wakeUpsWithoutShardedPubSub(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true,
		Config: []string{`rename-command SSUBSCRIBE ""`, `rename-command SPUBLISH ""`}})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			holder := clusterClient(t, cluster, a.conn, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond})
			waiter := shardWaiter(t, cluster, a.conn, nil)
			key := "classic-wake-" + a.name
			lock, err := holder.Acquire(bg, key)
			if err != nil {
				t.Fatal(err)
			}
			got := acquireInBackground(waiter, key)
			awaitClassicChannel(t, cluster, redlock.ReleaseChannel(key, true))
			if err := lock.Release(bg); err != nil {
				t.Fatalf("release where SPUBLISH is unknown: %v", err)
			}
			if r := <-got; r.err != nil {
				t.Fatalf("the waiter was not woken by the release: %v", r.err)
			} else {
				r.lock.Release(bg)
			}
		})
	}
}

// awaitClassicChannel waits until a node of cluster (independent servers,
// or a Redis Cluster) lists channel in PUBSUB CHANNELS: subscribed by
// SUBSCRIBE.
func awaitClassicChannel(t *testing.T, cluster *redlocktest.Cluster, channel string) {
	t.Helper()
	for deadline := time.Now().Add(shardSubscribed); ; time.Sleep(20 * time.Millisecond) {
		for _, n := range cluster.Nodes() {
			if slices.Contains(pubsubList(t, n, "CHANNELS"), channel) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, no node lists %q among the channels subscribed by SUBSCRIBE", shardSubscribed, channel)
		}
	}
}

// shardWaiter returns a Client over cluster whose Acquire calls retry only
// every shardWaitRetry (opts' other fields apply), closed at the end of the
// test.
func shardWaiter(t *testing.T, cluster *redlocktest.Cluster, conn func(*testing.T, []string) redlock.Conn, opts *redlock.Options) *redlock.Client {
	t.Helper()
	o := redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond}
	if opts != nil {
		o = *opts
	}
	o.Retry = redlock.Jittered(shardWaitRetry, shardWaitRetry)
	c, err := redlock.New([]redlock.Conn{conn(t, cluster.Addrs())}, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// acquired is the outcome of an Acquire.
type acquired struct {
	lock *redlock.Lock
	err  error
}

// acquireInBackground runs c.Acquire(key) with a deadline of
// shardWaitDeadline, and sends its outcome.
func acquireInBackground(c *redlock.Client, key string) <-chan acquired {
	out := make(chan acquired, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, shardWaitDeadline)
		defer cancel()
		lock, err := c.Acquire(ctx, key)
		out <- acquired{lock, err}
	}()
	return out
}

// keyPerMaster returns a key with prefix in a slot of each master of
// cluster, in the order of its nodes.
func keyPerMaster(cluster *redlocktest.Cluster, prefix string) []string {
	keys := make([]string, len(cluster.Nodes()))
	for i, found := 0, 0; found < len(keys); i++ {
		key := prefix + strconv.Itoa(i)
		if n := cluster.NodeForKey(key).Index(); keys[n] == "" {
			keys[n] = key
			found++
		}
	}
	return keys
}

// awaitShardChannels waits until PUBSUB SHARDCHANNELS on each master of
// want lists its channels, and no other master lists them; it then checks
// that no master has a channel subscribed by SUBSCRIBE (PUBSUB CHANNELS).
func awaitShardChannels(t *testing.T, cluster *redlocktest.Cluster, want map[*redlocktest.Node][]string) {
	t.Helper()
	deadline := time.Now().Add(shardSubscribed)
	for {
		problem := shardChannelsProblem(t, cluster, want)
		if problem == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", shardSubscribed, problem)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, n := range cluster.Nodes() {
		if classic := pubsubList(t, n, "CHANNELS"); len(classic) > 0 {
			t.Errorf("%s has channels subscribed by SUBSCRIBE: %q", n.Addr(), classic)
		}
	}
}

// shardChannelsProblem returns how the masters' shard channels differ from
// want (see awaitShardChannels), or "".
func shardChannelsProblem(t *testing.T, cluster *redlocktest.Cluster, want map[*redlocktest.Node][]string) string {
	for _, n := range cluster.Nodes() {
		listed := pubsubList(t, n, "SHARDCHANNELS")
		for m, channels := range want {
			for _, ch := range channels {
				if (m == n) != slices.Contains(listed, ch) {
					return n.Addr() + " lists the shard channels " + strconv.Quote(strings.Join(listed, " ")) +
						"; want " + strconv.Quote(ch) + " on " + m.Addr() + " only"
				}
			}
		}
	}
	return ""
}

// pubsubList returns what PUBSUB kind (CHANNELS, SHARDCHANNELS) lists on n.
func pubsubList(t *testing.T, n *redlocktest.Node, kind string) []string {
	t.Helper()
	v, err := n.Do(bg, "PUBSUB", kind)
	if err != nil {
		t.Fatalf("PUBSUB %s on %s: %v", kind, n.Addr(), err)
	}
	if v == "" {
		return nil
	}
	return strings.Split(v, "\n")
}

// shardSubscribers returns the ids of n's client connections that hold
// shard channel subscriptions (CLIENT LIST's ssub field).
func shardSubscribers(t *testing.T, n *redlocktest.Node) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(do(t, n, "CLIENT", "LIST"), "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		if subs, _ := strconv.Atoi(fields["ssub"]); subs > 0 {
			ids = append(ids, fields["id"])
		}
	}
	return ids
}

// awaitNewShardSubscriber waits until a connection of n that is not one of
// those killed holds a shard channel subscription.
func awaitNewShardSubscriber(t *testing.T, n *redlocktest.Node, killed []string) {
	t.Helper()
	for deadline := time.Now().Add(shardSubscribed); ; time.Sleep(20 * time.Millisecond) {
		ids := shardSubscribers(t, n)
		if slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(killed, id) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, only the killed connections %v of %s held shard subscriptions", shardSubscribed, killed, n.Addr())
		}
	}
}

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
// announced by SPUBLISH, wakes it. Over both adapters. Redis 7.0 and later
// (TestRedisCluster_wakeUpsWithoutShardedPubSub covers the others).
func TestRedisCluster_waiterWokenByShardedPubSub(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	needShardedPubSub(t, cluster)
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
// each channel on its own master (any node, by SUBSCRIBE, before Redis
// 7.0), and each release wakes its waiter.
func TestRedisCluster_waitersOnEveryMasterWoken(t *testing.T) {
	t.Parallel()
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
			awaitReleaseChannels(t, cluster, want)
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
// the waiter subscribes again. Over both adapters. Before Redis 7.0 the
// subscription is by SUBSCRIBE, which a moved slot does not end: only the
// killed connection is tried there.
func TestRedisCluster_waiterResubscribesAfterALostSubscription(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	losses := []string{"connection killed", "slot moved"}
	if !cluster.Version().Has(redlocktest.ShardedPubSub) {
		losses = losses[:1]
	}
	// The slot that moves would sit out the recovery delay on its new
	// master (and refuse MarkReady); this test is about wake-ups.
	opts := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond, DisableQuarantine: true}
	for _, a := range clusterAdapters {
		for _, loss := range losses {
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
				awaitReleaseChannels(t, cluster, map[*redlocktest.Node][]string{from: {channel}})
				to := from
				if loss == "slot moved" {
					to = cluster.Nodes()[(from.Index()+1)%len(cluster.Nodes())]
					migrateSlot(t, redlocktest.KeySlot(key), from, to)
					if listed := pubsubList(t, from, "SHARDCHANNELS"); slices.Contains(listed, channel) {
						t.Fatalf("%s still lists %q after its slot moved", from.Addr(), channel)
					}
				} else {
					killed := killSubscribers(t, cluster)
					if len(killed) == 0 {
						t.Fatalf("no connection of the cluster holds a subscription")
					}
					awaitNewSubscriber(t, cluster, killed)
				}
				awaitReleaseChannels(t, cluster, map[*redlocktest.Node][]string{to: {channel}})
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
// announces by SPUBLISH, heard by SSUBSCRIBE on the key's master (before
// Redis 7.0, by PUBLISH, heard by SUBSCRIBE on any node), the server by
// PUBLISH, heard by SUBSCRIBE; a waiter needs both (the quorum of two
// nodes) to wake.
func TestRedisCluster_mixedWithAServerWakesByBoth(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, Unmarked: true})
	server := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Unmarked: true})
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
			awaitReleaseChannels(t, cluster, map[*redlocktest.Node][]string{cluster.NodeForKey(key): {channel}})
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

// A Redis Cluster without sharded pub/sub (before Redis 7.0, or with
// SSUBSCRIBE and SPUBLISH renamed away) still wakes waiters: releases fall
// back to PUBLISH, and subscriptions to SUBSCRIBE.
func TestRedisCluster_wakeUpsWithoutShardedPubSub(t *testing.T) {
	t.Parallel()
	cluster := startWithoutShardedPubSub(t)
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

// Over a Redis Cluster without sharded pub/sub, an adapter's Listen
// subscribes by SUBSCRIBE from its first channel on, and keeps its
// connection: a Listen that failed on SSUBSCRIBE would be called again
// only after a pause, and a release meanwhile would wake no waiter. Over
// both adapters.
func TestRedisCluster_listenWithoutShardedPubSubSubscribesAtOnce(t *testing.T) {
	cluster := startWithoutShardedPubSub(t)
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			conn := a.conn(t, cluster.Addrs())
			defer conn.Close()
			l, ok := conn.(redlock.Listener)
			if !ok {
				t.Fatalf("%T has no Listen method", conn)
			}
			ctx, cancel := context.WithCancel(bg)
			subscribe, unsubscribe := make(chan string), make(chan string)
			heard := make(chan string, 8)
			ended := make(chan error, 1)
			go func() {
				ended <- l.Listen(ctx, subscribe, unsubscribe, func(channel, payload string) {
					select {
					case heard <- channel + " " + payload:
					default:
					}
				})
			}()
			defer func() { cancel(); <-ended }()
			channel := redlock.ReleaseChannel("listen-"+a.name, true)
			select {
			case subscribe <- channel:
			case err := <-ended:
				t.Fatalf("Listen returned before its first subscription: %v", err)
			}
			for deadline := time.Now().Add(shardSubscribed); !classicChannelListed(t, cluster, channel); time.Sleep(20 * time.Millisecond) {
				select {
				case err := <-ended:
					ended <- err
					t.Fatalf("Listen returned after its first subscription: %v", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %s, no node lists %q among the channels subscribed by SUBSCRIBE", shardSubscribed, channel)
				}
			}
			do(t, cluster.Node(0), "PUBLISH", channel, "token")
			// The node's confirmation of the subscription first, as an
			// empty message, then the message published.
			for _, want := range []string{channel + " ", channel + " token"} {
				select {
				case m := <-heard:
					if m != want {
						t.Errorf("heard %q, want %q", m, want)
					}
				case err := <-ended:
					ended <- err
					t.Fatalf("Listen returned before %q came: %v", want, err)
				case <-time.After(shardSubscribed):
					t.Fatalf("after %s, Listen passed on no %q", shardSubscribed, want)
				}
			}
		})
	}
}

// startWithoutShardedPubSub starts a Redis Cluster without sharded pub/sub:
// of a release before 7.0, or else with SSUBSCRIBE and SPUBLISH renamed
// away.
func startWithoutShardedPubSub(t *testing.T) *redlocktest.Cluster {
	t.Helper()
	v, err := redlocktest.ServerVersion("")
	if err != nil {
		t.Fatal(err)
	}
	var config []string
	if v.Has(redlocktest.ShardedPubSub) {
		config = []string{`rename-command SSUBSCRIBE ""`, `rename-command SPUBLISH ""`}
	}
	return redlocktest.Start(t, redlocktest.Options{RedisCluster: true, Config: config})
}

// needShardedPubSub skips the test where cluster's redis-server has no
// sharded pub/sub.
func needShardedPubSub(t *testing.T, cluster *redlocktest.Cluster) {
	t.Helper()
	if v := cluster.Version(); !v.Has(redlocktest.ShardedPubSub) {
		t.Skipf("redis-server %s lacks %s", v, redlocktest.ShardedPubSub)
	}
}

// awaitReleaseChannels waits until the waiters' release channels are
// subscribed: by SSUBSCRIBE, each on its master as want says (see
// awaitShardChannels), or, where the cluster's redis-server has no sharded
// pub/sub, by SUBSCRIBE on any node.
func awaitReleaseChannels(t *testing.T, cluster *redlocktest.Cluster, want map[*redlocktest.Node][]string) {
	t.Helper()
	if cluster.Version().Has(redlocktest.ShardedPubSub) {
		awaitShardChannels(t, cluster, want)
		return
	}
	for _, channels := range want {
		for _, ch := range channels {
			awaitClassicChannel(t, cluster, ch)
		}
	}
}

// classicChannelListed reports whether a node of cluster lists channel in
// PUBSUB CHANNELS.
func classicChannelListed(t *testing.T, cluster *redlocktest.Cluster, channel string) bool {
	t.Helper()
	for _, n := range cluster.Nodes() {
		if slices.Contains(pubsubList(t, n, "CHANNELS"), channel) {
			return true
		}
	}
	return false
}

// awaitClassicChannel waits until a node of cluster (independent servers,
// or a Redis Cluster) lists channel in PUBSUB CHANNELS: subscribed by
// SUBSCRIBE.
func awaitClassicChannel(t *testing.T, cluster *redlocktest.Cluster, channel string) {
	t.Helper()
	for deadline := time.Now().Add(shardSubscribed); !classicChannelListed(t, cluster, channel); time.Sleep(20 * time.Millisecond) {
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

// subscriber is a client connection of a node of the cluster.
type subscriber struct {
	node *redlocktest.Node
	id   string
}

// killSubscribers kills the connections of cluster's nodes that hold
// subscriptions: shard channel ones (CLIENT LIST's ssub field), or
// classic ones (sub) where redis-server has no sharded pub/sub, and
// returns them.
func killSubscribers(t *testing.T, cluster *redlocktest.Cluster) []subscriber {
	t.Helper()
	killed := subscribers(t, cluster)
	for _, s := range killed {
		do(t, s.node, "CLIENT", "KILL", "ID", s.id)
	}
	return killed
}

// subscribers returns the connections of cluster's nodes that hold
// subscriptions (see killSubscribers).
func subscribers(t *testing.T, cluster *redlocktest.Cluster) []subscriber {
	t.Helper()
	field := "sub"
	if cluster.Version().Has(redlocktest.ShardedPubSub) {
		field = "ssub"
	}
	var subs []subscriber
	for _, n := range cluster.Nodes() {
		for _, line := range strings.Split(do(t, n, "CLIENT", "LIST"), "\n") {
			fields := map[string]string{}
			for _, f := range strings.Fields(line) {
				if k, v, ok := strings.Cut(f, "="); ok {
					fields[k] = v
				}
			}
			if count, _ := strconv.Atoi(fields[field]); count > 0 {
				subs = append(subs, subscriber{n, fields["id"]})
			}
		}
	}
	return subs
}

// awaitNewSubscriber waits until a connection of cluster's nodes that is
// not one of those killed holds a subscription (see killSubscribers).
func awaitNewSubscriber(t *testing.T, cluster *redlocktest.Cluster, killed []subscriber) {
	t.Helper()
	for deadline := time.Now().Add(shardSubscribed); ; time.Sleep(20 * time.Millisecond) {
		if slices.ContainsFunc(subscribers(t, cluster), func(s subscriber) bool { return !slices.Contains(killed, s) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, only the killed connections %v held subscriptions", shardSubscribed, killed)
		}
	}
}

package redlock_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Separate clients waiting for a full semaphore are served in the order
// they began waiting: each queues on the nodes in the queue of every
// permit, and a node keeps a free permit for the first in line. Only the
// releases' wake-ups serve them: their retry delay is a minute.
func TestSemaphore_separateClientsServedInOrder(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, lasting())
		lock, err := holder.TryAcquire(bg, "jobs", redlock.WithLimit(1))
		if err != nil {
			t.Fatal(err)
		}
		waitForKey(t, cluster, lock.WireKey(), lock.Token())
		got := make([]chan *redlock.Lock, 3)
		var ids []string
		for i := range got {
			w := newClient(t, cluster, a, slowWaiter())
			ids = append(ids, w.ID())
			got[i] = acquirePermitInBackground(t, w, "jobs", 1)
			awaitPermitQueues(t, cluster, "jobs", 1, ids)
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			select {
			case l := <-got[i]:
				if l == nil {
					t.FailNow()
				}
				if err := l.Release(bg); err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("waiter %d, next in line, was not served in turn", i)
			}
		}
	})
}

// A waiter queued on every permit that takes one of them leaves the other
// permits' queues, so that the node does not keep those free for it: the
// next release of another permit serves the waiter behind it.
func TestSemaphore_aServedWaiterLeavesTheOtherPermitsQueues(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		held := holdEveryPermit(t, cluster, newClient(t, cluster, a, lasting()), "pool", 2)
		first, second := newClient(t, cluster, a, slowWaiter()), newClient(t, cluster, a, slowWaiter())
		gotFirst := acquirePermitInBackground(t, first, "pool", 2)
		awaitPermitQueues(t, cluster, "pool", 2, []string{first.ID()})
		gotSecond := acquirePermitInBackground(t, second, "pool", 2)
		awaitPermitQueues(t, cluster, "pool", 2, []string{first.ID(), second.ID()})
		for i, got := range []chan *redlock.Lock{gotFirst, gotSecond} {
			if err := held[i].Release(bg); err != nil {
				t.Fatal(err)
			}
			select {
			case l := <-got:
				if l == nil {
					t.FailNow()
				}
				if l.Key() != held[i].Key() {
					t.Errorf("waiter %d got %s, want the released %s", i, l.Key(), held[i].Key())
				}
				defer l.Release(bg)
			case <-time.After(10 * time.Second):
				t.Fatalf("waiter %d was not served by the release of %s", i, held[i].Key())
			}
		}
	})
}

// holdEveryPermit takes every permit of name's limit with c, each once
// every node holds it.
func holdEveryPermit(t *testing.T, cluster *redlocktest.Cluster, c *redlock.Client, name string, limit int) []*redlock.Lock {
	t.Helper()
	var held []*redlock.Lock
	for range limit {
		l, err := c.TryAcquire(bg, name, redlock.WithLimit(limit))
		if err != nil {
			t.Fatal(err)
		}
		waitForKey(t, cluster, l.WireKey(), l.Token())
		held = append(held, l)
	}
	return held
}

// slowWaiter returns options under which only a release's wake-up serves a
// waiter: its retry delay is a minute.
func slowWaiter() *redlock.Options {
	return &redlock.Options{TTL: 10 * time.Second, NodeTimeout: time.Second, Retry: redlock.Jittered(time.Minute, time.Minute)}
}

// acquirePermitInBackground takes a permit of name's limit with c.Acquire,
// with a deadline of 20 s, and sends the lock, nil on failure.
func acquirePermitInBackground(t *testing.T, c *redlock.Client, name string, limit int) chan *redlock.Lock {
	got := make(chan *redlock.Lock, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		l, err := c.Acquire(ctx, name, redlock.WithLimit(limit))
		if err != nil {
			t.Errorf("%s: %v", c.ID(), err)
		}
		got <- l
	}()
	return got
}

// awaitPermitQueues waits until a quorum of cluster's nodes queue ids, in
// that order, for every permit of name's limit.
func awaitPermitQueues(t *testing.T, cluster *redlocktest.Cluster, name string, limit int, ids []string) {
	t.Helper()
	keys := make([]string, limit)
	for i := range keys {
		keys[i] = name + ":permit:" + strconv.Itoa(i+1)
	}
	awaitQueues(t, cluster, keys, ids)
}

// awaitQueues waits until a quorum of cluster's nodes queue ids, in that
// order, for every one of keys.
func awaitQueues(t *testing.T, cluster *redlocktest.Cluster, keys []string, ids []string) {
	t.Helper()
	want := strings.Join(ids, " ")
	eventually(t, "the waiters "+want+" queued for "+strings.Join(keys, ", "), func() bool {
		nodes := 0
		for _, n := range cluster.Nodes() {
			all := true
			for _, key := range keys {
				queue, _ := redlock.QueueKeys(key)
				all = all && strings.Join(strings.Fields(do(t, n, "ZRANGE", queue, "0", "-1")), " ") == want
			}
			if all {
				nodes++
			}
		}
		return nodes >= len(cluster.Nodes())/2+1
	})
}

// Two waiters queued on every permit are both served when every permit is
// released at once: the first takes one, and as it leaves the other
// permit's queue, where the node kept that permit free for it, it passes
// its turn on to the second.
func TestSemaphore_aServedWaiterPassesItsTurnOn(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		held := holdEveryPermit(t, cluster, newClient(t, cluster, a, lasting()), "pair", 2)
		first, second := newClient(t, cluster, a, slowWaiter()), newClient(t, cluster, a, slowWaiter())
		got := []chan *redlock.Lock{acquirePermitInBackground(t, first, "pair", 2)}
		awaitPermitQueues(t, cluster, "pair", 2, []string{first.ID()})
		got = append(got, acquirePermitInBackground(t, second, "pair", 2))
		awaitPermitQueues(t, cluster, "pair", 2, []string{first.ID(), second.ID()})
		forEach(len(held), func(i int) { held[i].Release(bg) })
		for i := range got {
			select {
			case l := <-got[i]:
				if l == nil {
					t.FailNow()
				}
				defer l.Release(bg)
			case <-time.After(10 * time.Second):
				t.Fatalf("waiter %d was not served after both permits were released", i)
			}
		}
	})
}

// forEach calls f(0) to f(n-1) at once, and returns when they all have.
func forEach(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// A client that leaves the queue of a free key, where it was first in
// line, names the next clients in line, as a release does: the node kept
// the key free for it. Leaving the queue of a held key names nobody.
func TestQueue_leavingAFreeKeysQueuePassesTheTurnOn(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := cluster.Node(0)
	leaver := newClient(t, cluster, adapters[0], fast())
	next := newClient(t, cluster, adapters[0], fast())
	const since = "1000"
	for _, key := range []string{"free", "held"} {
		queue, deadlines := redlock.QueueKeys(key)
		far := strconv.FormatInt(time.Now().Add(time.Hour).UnixMicro(), 10)
		do(t, n, "ZADD", queue, since, leaver.ID(), "2000", next.ID())
		do(t, n, "HSET", deadlines, leaver.ID(), far, next.ID(), far)
		do(t, n, "SET", redlock.WaitingKey(key), "1", "PX", "60000") // as the refusals that queued them left
	}
	do(t, n, "SET", "held", "someone-else", "PX", "10000")
	sub := goredisv9.NewClient(&goredisv9.Options{Addr: n.Addr()}).Subscribe(bg,
		redlock.ReleaseChannel("free", false)+" "+next.ID(), redlock.ReleaseChannel("held", false)+" "+next.ID())
	defer sub.Close()
	for range 2 {
		if _, err := sub.Receive(bg); err != nil {
			t.Fatal(err)
		}
	}
	leaver.LeaveQueues(bg, []string{"held", "free"}, since)
	select {
	case msg := <-sub.Channel():
		if want := redlock.ReleaseChannel("free", false) + " " + next.ID(); msg.Channel != want {
			t.Fatalf("heard on %q, want %q", msg.Channel, want)
		}
		if !strings.HasSuffix(msg.Payload, " "+next.ID()) {
			t.Errorf("message %q does not name the next in line", msg.Payload)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("leaving the queue of a free key named nobody")
	}
	for _, key := range []string{"free", "held"} {
		queue, _ := redlock.QueueKeys(key)
		if q := strings.Fields(do(t, n, "ZRANGE", queue, "0", "-1")); len(q) != 1 || q[0] != next.ID() {
			t.Errorf("queue of %s: %q, want only %s", key, q, next.ID())
		}
	}
	// A message of ours, sent after the leave, is the next one heard: the
	// leave of the held key's queue sent none before it.
	held := redlock.ReleaseChannel("held", false) + " " + next.ID()
	do(t, n, "PUBLISH", held, "marker")
	if msg := <-sub.Channel(); msg.Channel != held || msg.Payload != "marker" {
		t.Errorf("heard %q on %q: leaving a held key's queue named someone", msg.Payload, msg.Channel)
	}
}

// A waiter that died while first in line (its place here is written by
// hand, and lasts an hour) does not keep a released permit from the
// waiter behind it: the release names the dead client first and the live
// one second, which tries a node timeout later and does not defer to a
// client that let its turn pass. Its retry delay is a minute: only that
// wake-up can serve it in time.
func TestSemaphore_aDeadFirstInLineLetsTheSecondServe(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		held := holdEveryPermit(t, cluster, newClient(t, cluster, a, lasting()), "pool", 2)
		const ghost = "ghost-client"
		for i := 1; i <= 2; i++ {
			queueGhost(t, cluster, "pool:permit:"+strconv.Itoa(i), ghost)
		}
		w := newClient(t, cluster, a, slowWaiter())
		got := acquirePermitInBackground(t, w, "pool", 2)
		awaitPermitQueues(t, cluster, "pool", 2, []string{ghost, w.ID()})
		awaitListening(t, cluster, w, []string{"pool:permit:1", "pool:permit:2"})
		if err := held[0].Release(bg); err != nil {
			t.Fatal(err)
		}
		awaitPermit(t, got, held[0], "the released permit was kept for a dead client first in line").Release(bg)
	})
}

// awaitPermit waits up to 10 s for the lock that got sends, fails the test
// with why if none comes, and returns it, after checking that it is the
// permit of the lock released.
func awaitPermit(t *testing.T, got chan *redlock.Lock, released *redlock.Lock, why string) *redlock.Lock {
	t.Helper()
	select {
	case l := <-got:
		if l == nil {
			t.FailNow()
		}
		if l.Key() != released.Key() {
			t.Errorf("the waiter got %s, want the released %s", l.Key(), released.Key())
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal(why)
		return nil
	}
}

// Two clients that died together while first and second in a semaphore's
// line (their places here are written by hand, and last an hour) keep a
// freed permit from the third for a moment only: the release that names
// them shortens their places to a few node timeouts, which they do not
// renew, and the third's next attempt finds them gone. A client behind,
// whom no release named, keeps its place.
func TestSemaphore_twoDeadClientsFirstInLineLetTheThirdServe(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, &redlock.Options{TTL: 30 * time.Second, NodeTimeout: 100 * time.Millisecond})
		held := holdEveryPermit(t, cluster, holder, "pool", 2)
		keys := []string{"pool:permit:1", "pool:permit:2"}
		for _, key := range keys {
			queueGhost(t, cluster, key, "ghost-1", "ghost-2")
			queueGhostAt(t, cluster, key, "ghost-behind", time.Now().Add(time.Hour))
		}
		w := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 300 * time.Millisecond,
			Retry: redlock.Jittered(100*time.Millisecond, 200*time.Millisecond)})
		got := acquirePermitInBackground(t, w, "pool", 2)
		awaitPermitQueues(t, cluster, "pool", 2, []string{"ghost-1", "ghost-2", w.ID(), "ghost-behind"})
		_, deadlines := redlock.QueueKeys(held[0].Key())
		behind := do(t, cluster.Node(0), "HGET", deadlines, "ghost-behind")
		if err := held[0].Release(bg); err != nil {
			t.Fatal(err)
		}
		l := awaitPermit(t, got, held[0], "the released permit was kept for two dead clients first in line")
		// Before the waiter's release, which names it.
		for _, n := range cluster.Nodes() {
			if v := do(t, n, "HGET", deadlines, "ghost-behind"); v != behind {
				t.Errorf("node %s: the place of a client no release named lasts until %s, want %s", n.Addr(), v, behind)
			}
		}
		l.Release(bg)
	})
}

// awaitListening waits until every node of cluster has c's channel for
// each of keys subscribed, on which a release names c: a release before
// that would go unheard, and the waiter's next attempt would be one that
// no release named it for.
func awaitListening(t *testing.T, cluster *redlocktest.Cluster, c *redlock.Client, keys []string) {
	t.Helper()
	eventually(t, c.ID()+" listening for the releases of "+strings.Join(keys, ", "), func() bool {
		for _, n := range cluster.Nodes() {
			for _, key := range keys {
				if do(t, n, "PUBSUB", "CHANNELS", redlock.ReleaseChannel(key, false)+" "+c.ID()) == "" {
					return false
				}
			}
		}
		return true
	})
}

// queueGhost puts ids first in key's queue on every node of cluster, in
// that order, as clients that queued an hour ago and died would have left
// them, but lasting an hour more.
func queueGhost(t *testing.T, cluster *redlocktest.Cluster, key string, ids ...string) {
	t.Helper()
	now := time.Now()
	for i, id := range ids {
		queueGhostAt(t, cluster, key, id, now.Add(-time.Hour+time.Duration(i)*time.Millisecond))
	}
}

// queueGhostAt puts id in key's queue on every node of cluster, as a
// client that began waiting at since, lasting an hour.
func queueGhostAt(t *testing.T, cluster *redlocktest.Cluster, key, id string, since time.Time) {
	t.Helper()
	queue, deadlines := redlock.QueueKeys(key)
	until := strconv.FormatInt(time.Now().Add(time.Hour).UnixMicro(), 10)
	for _, n := range cluster.Nodes() {
		do(t, n, "ZADD", queue, strconv.FormatInt(since.UnixMicro(), 10), id)
		do(t, n, "HSET", deadlines, id, until)
		do(t, n, "PEXPIRE", queue, "3600000")
		do(t, n, "PEXPIRE", deadlines, "3600000")
	}
}

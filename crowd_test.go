package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A client whose attempt is refused enters the key's queue on every node, in
// the order the clients began waiting; the release names the first two
// clients in line, and the first one takes the lock. Nothing is left in the
// queue once nobody waits.
func TestQueue_refusedClientsAreQueuedAndNamedInOrder(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	slow := redlock.Jittered(time.Minute, time.Minute) // only a wake-up can serve them
	holder := newClient(t, cluster, adapters[0], lasting())
	var waiters []*redlock.Client
	for range 3 {
		waiters = append(waiters, newClient(t, cluster, adapters[0], &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, Retry: slow}))
	}
	lock, err := holder.TryAcquire(bg, "crowd")
	if err != nil {
		t.Fatal(err)
	}
	waitForKey(t, cluster, "crowd", lock.Token()) // every node refuses the waiters
	got := make([]chan *redlock.Lock, len(waiters))
	for i, w := range waiters {
		got[i] = make(chan *redlock.Lock, 1)
		go func() {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			l, err := w.Acquire(ctx, "crowd")
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			got[i] <- l
		}()
		// One after the other: the next begins once this one was refused.
		eventually(t, fmt.Sprintf("waiter %d refused and listening", i), func() bool { return w.Listening("crowd") == 1 })
	}
	queue, deadlines := redlock.QueueKeys("crowd")
	// A refusal returns at a quorum: the last node queues the waiter after.
	want := waiters[0].ID() + " " + waiters[1].ID() + " " + waiters[2].ID()
	for _, n := range cluster.Nodes() {
		eventually(t, fmt.Sprintf("node %d: queue %q", n.Index(), want), func() bool {
			return strings.Join(strings.Fields(do(t, n, "ZRANGE", queue, "0", "-1")), " ") == want
		})
	}

	// The release goes to the channels of the first two in line only: not
	// to the third's, nor to the key's.
	channels := []string{"redlock:released:crowd"}
	for _, w := range waiters {
		channels = append(channels, "redlock:released:crowd "+w.ID())
	}
	sub := goredisv9.NewClient(&goredisv9.Options{Addr: cluster.Node(0).Addr()}).Subscribe(bg, channels...)
	defer sub.Close()
	for range channels {
		if _, err := sub.Receive(bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
	wantMsg := lock.Token() + " " + waiters[0].ID() + " " + waiters[1].ID()
	heard := map[string]string{}
	for listening, stop := true, time.After(500*time.Millisecond); listening; {
		select {
		case msg := <-sub.Channel():
			heard[msg.Channel] = msg.Payload
		case <-stop:
			listening = false
		}
	}
	if want := map[string]string{channels[1]: wantMsg, channels[2]: wantMsg}; !maps.Equal(heard, want) {
		t.Errorf("release announced %q, want %q: the token and the first two in line, on their own channels only", heard, want)
	}
	serveInOrder(t, got)
	wantExpiring(t, cluster, 2*time.Second, queue, deadlines)
}

// A client keeps its place in the key's queue on every node while it waits,
// also on the nodes that granted a failed attempt, and until its release
// of the lock it won, which takes it out on every node, also on those that
// refused it: otherwise the nodes' queues differ, and each names other
// clients to try at the next release, who split the votes.
func TestQueue_aClientKeepsItsPlaceUntilItsRelease(t *testing.T) {
	cluster, lock := heldOnThreeNodes(t, "place")
	// Only a wake-up makes the waiter try again.
	waiter := newClient(t, cluster, adapters[0], &redlock.Options{TTL: 30 * time.Second, NodeTimeout: 300 * time.Millisecond,
		Retry: redlock.Jittered(time.Minute, time.Minute)})
	type result struct {
		lock *redlock.Lock
		err  error
	}
	got := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		l, err := waiter.Acquire(ctx, "place")
		got <- result{l, err}
	}()
	queue, _ := redlock.QueueKeys("place")
	queued := func(n *redlocktest.Node) bool { return do(t, n, "ZRANGE", queue, "0", "-1") == waiter.ID() }
	eventually(t, "the waiter queued on every node", func() bool {
		return queued(cluster.Node(0)) && queued(cluster.Node(1)) && queued(cluster.Node(2))
	})

	// The holder's lock is gone from node 0 (a restart, say), and node 0
	// names the waiter: it wins there only, and fails.
	wakeOn := func(n *redlocktest.Node) {
		// The waiter queued before it subscribed: a release announced
		// before that would wake nobody.
		eventually(t, fmt.Sprint("the waiter subscribed on node ", n.Index()), func() bool {
			return slices.ContainsFunc(pubsubList(t, n, "CHANNELS"), func(ch string) bool {
				return strings.HasPrefix(ch, "redlock:released:place")
			})
		})
		do(t, n, "DEL", "place")
		token := fmt.Sprint("gone-", n.Index()) // a release of its own
		do(t, n, "PUBLISH", "redlock:released:place "+waiter.ID(), token+" "+waiter.ID())
	}
	fence := func() string { return do(t, cluster.Node(0), "GET", "redlock:fence:place") }
	before := fence()
	wakeOn(cluster.Node(0))
	eventually(t, "the waiter's attempt granted on node 0", func() bool { return fence() != before })
	eventually(t, "the failed attempt released on node 0", func() bool { return keyOn(t, cluster.Node(0), "place") == "" })
	for _, n := range cluster.Nodes() {
		if !queued(n) {
			t.Errorf("node %d: queue %q after a failed attempt, want the waiter's place kept", n.Index(), do(t, n, "ZRANGE", queue, "0", "-1"))
		}
	}

	// Node 1 too: the waiter wins on nodes 0 and 1, and is refused on 2.
	wakeOn(cluster.Node(1))
	var won *redlock.Lock
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("waiter: %v", r.err)
		}
		won = r.lock
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not win on two nodes of three")
	}
	if err := won.Release(bg); err != nil {
		t.Fatal(err)
	}
	// The release returned at a quorum; the last node follows.
	for _, n := range cluster.Nodes() {
		eventually(t, fmt.Sprint("node ", n.Index(), "'s queue empty after the winner's release"), func() bool {
			return do(t, n, "ZRANGE", queue, "0", "-1") == ""
		})
	}
	if keyOn(t, cluster.Node(2), "place") != lock.Token() {
		t.Error("the winner's release took the holder's key on node 2")
	}
}

// serveInOrder releases the locks of three waiters as they get them, and
// fails when the third in line was served first: the release names the
// first two, so either may win the race between them.
func serveInOrder(t *testing.T, got []chan *redlock.Lock) {
	t.Helper()
	for served := range got {
		var l *redlock.Lock
		var who int
		select {
		case l = <-got[0]:
		case l = <-got[1]:
			who = 1
		case l = <-got[2]:
			who = 2
		}
		if l == nil {
			t.Fatalf("a waiter got no lock")
		}
		if served == 0 && who == 2 {
			t.Errorf("the third in line was served first")
		}
		if err := l.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
}

// wantExpiring fails when a key of keys has no TTL, or more than within, on
// a node of cluster.
func wantExpiring(t *testing.T, cluster *redlocktest.Cluster, within time.Duration, keys ...string) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		for _, k := range keys {
			if ms, _ := strconv.Atoi(do(t, n, "PTTL", k)); ms > int(within.Milliseconds()) || ms == -1 {
				t.Errorf("node %d: %s has PTTL %d ms once nobody waits, want gone or within %v", n.Index(), k, ms, within)
			}
		}
	}
}

// Separate clients (processes, say) waiting for one key are all served, with
// no acquisition timing out while the lock changes hands: a release wakes
// the first clients in line only, so they do not split the nodes' votes.
func TestCrowd_separateClientsAreAllServed(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{})
	const clients = 24
	run := 3 * time.Second
	var mu sync.Mutex
	grants := make([]int, clients)
	timedOut := 0
	var wg sync.WaitGroup
	var cs []*redlock.Client
	for i := range clients {
		cs = append(cs, newClient(t, cluster, adapters[i%2], &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 200 * time.Millisecond}))
	}
	end := time.Now().Add(run)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(bg, 2*run)
				l, err := c.Acquire(ctx, "crowd")
				cancel()
				mu.Lock()
				if err != nil {
					timedOut++
				} else {
					grants[i]++
				}
				mu.Unlock()
				if err == nil {
					time.Sleep(time.Millisecond)
					l.Release(bg)
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for i, n := range grants {
		total += n
		if n == 0 {
			t.Errorf("client %d never got the lock in %v", i, run)
		}
	}
	t.Logf("%d clients: %d grants in %v, %d acquisitions timed out", clients, total, run, timedOut)
	if timedOut > 0 {
		t.Errorf("%d acquisitions timed out after %v", timedOut, 2*run)
	}
}

// do runs a command on node n and returns its reply; a nil reply is "".
func do(t *testing.T, n *redlocktest.Node, args ...string) string {
	t.Helper()
	v, err := n.Do(bg, args...)
	if err != nil && !errors.Is(err, redlocktest.ErrNil) {
		t.Fatalf("%v on node %d: %v", args, n.Index(), err)
	}
	return v
}

// A client that the nodes queued behind the two that the next release
// names tries only every half second to second, whatever its retry delay:
// the release that makes it one of the next two wakes it. Its place is
// kept meanwhile, and it is served in turn.
func TestQueue_clientsBehindTheNextInLineTryRarely(t *testing.T) {
	cluster, lock := heldOnThreeNodes(t, "line")
	var wg sync.WaitGroup
	defer wg.Wait() // no waiter reports after the test ended
	got := make([]chan *redlock.Lock, 3)
	for i := range got {
		// The first two in line retry only when woken; the third every 10 ms.
		retry := redlock.Jittered(time.Minute, time.Minute)
		if i == 2 {
			retry = redlock.Jittered(10*time.Millisecond, 10*time.Millisecond)
		}
		w := newClient(t, cluster, adapters[0], fast())
		got[i] = make(chan *redlock.Lock, 1)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			l, err := w.Acquire(ctx, "line", redlock.WithRetry(retry))
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			got[i] <- l
		})
		time.Sleep(50 * time.Millisecond) // one after the other
	}
	start := time.Now()
	before := scriptCalls(t, cluster)
	time.Sleep(1500 * time.Millisecond)
	calls := (scriptCalls(t, cluster) - before) / 3
	window := time.Since(start) // 1.5 s, and the reads of a loaded machine
	// Every 10 ms, the third would have tried about 150 times, each a
	// script call on each of the 3 nodes. It tries at most once each half
	// second, and the first two renew their places at most once a second.
	if most := int(window/(500*time.Millisecond)) + 1 + 2*(int(window/time.Second)+1); calls > most {
		t.Errorf("%d script calls per node in %v, want at most %d: the third in line tries once every half second to second",
			calls, window.Round(time.Millisecond), most)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
	serveInOrder(t, got)
}

// heldOnThreeNodes starts three nodes and takes key on every one, with a
// TTL that outlasts the test: a lock that expired would be released
// unannounced, and only clients that poll would find it free.
func heldOnThreeNodes(t *testing.T, key string) (*redlocktest.Cluster, *redlock.Lock) {
	t.Helper()
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], &redlock.Options{TTL: 30 * time.Second, NodeTimeout: 300 * time.Millisecond})
	lock, err := holder.TryAcquire(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	waitForKey(t, cluster, key, lock.Token())
	return cluster, lock
}

// A client's entry in a key's queue that an earlier acquisition of its left
// on a node (it was refused there with another time, as when a handed-off
// attempt failed and its goroutine queued again) becomes the winner's when
// the node grants the client the key, so that the winner's release takes
// it out: left behind, it would hold the key's readers out as a waiting
// writer until it lapsed.
func TestQueue_aGrantTakesOverTheClientsLeftoverEntry(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], nil)
	node := cluster.Node(0)
	queue, deadlines := redlock.QueueKeys("leftover")
	// An entry of this client, from an acquisition that began an hour ago
	// on the client's clock, live for a minute more.
	now := time.Now()
	do(t, node, "ZADD", queue, fmt.Sprint(now.Add(-time.Hour).UnixMicro()), c.ID())
	do(t, node, "HSET", deadlines, c.ID(), fmt.Sprint(now.Add(time.Minute).UnixMicro()))
	do(t, node, "SET", redlock.WaitingKey("leftover"), "1", "PX", "60000") // as the refusal that queued it left
	lock, err := c.Acquire(bg, "leftover")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
	if n := do(t, node, "ZCARD", queue); n != "0" {
		t.Fatalf("%s entries left in the queue after the release of the client's lock, want 0", n)
	}
	reader, err := c.TryAcquire(bg, "leftover", redlock.WithShared())
	if err != nil {
		t.Fatalf("a reader after the writer's release: %v", err)
	}
	reader.Release(bg)
}

// subscribeReleases subscribes to the release channels of key on n, and
// returns a function that waits for the next announcement there, up to
// 10 s, and returns its channel.
func subscribeReleases(t *testing.T, n *redlocktest.Node, key string) func() string {
	t.Helper()
	sub := goredisv9.NewClient(&goredisv9.Options{Addr: n.Addr()})
	ps := sub.PSubscribe(bg, redlock.ReleaseChannel(key, false)+"*")
	t.Cleanup(func() { ps.Close(); sub.Close() })
	if _, err := ps.Receive(bg); err != nil {
		t.Fatal(err)
	}
	messages := ps.Channel()
	return func() string {
		t.Helper()
		select {
		case m := <-messages:
			return m.Channel
		case <-time.After(10 * time.Second):
			t.Fatal("no release announced within 10 s")
			return ""
		}
	}
}

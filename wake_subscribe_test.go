package redlock_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A release announced before the waiter's subscription was up is not
// missed: once the nodes confirm the subscription, the waiter tries again,
// long before its retry delay.
func TestAcquire_releaseBeforeTheSubscriptionIsUpIsNotMissed(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, lasting())
		gate := make(chan struct{})
		var conns []redlock.Conn
		for _, c := range a.conns(t, cluster.Addrs()) {
			conns = append(conns, gatedSubscriptions{Conn: c, gate: gate})
		}
		waiter, err := redlock.New(conns, &redlock.Options{NodeTimeout: 300 * time.Millisecond,
			Retry: redlock.Jittered(time.Minute, time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { waiter.Close() })

		lock, err := holder.TryAcquire(bg, "late")
		if err != nil {
			t.Fatal(err)
		}
		got := acquireLater(waiter, "late")
		eventually(t, "the waiter refused, listening", func() bool { return waiter.Listening("late") == 1 })
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		// Every node announced the release, which no subscription heard.
		waitForKey(t, cluster, "late", "")
		close(gate)
		select {
		case l := <-got:
			if l == nil {
				t.Fatal("the waiter was not granted the lock")
			}
			l.Release(bg)
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter missed the release announced before its subscription was up")
		}
	})
}

// gatedSubscriptions is a Conn whose subscriptions reach the node only
// once gate is closed: a subscription on its way, over a slow link or to
// a busy node.
type gatedSubscriptions struct {
	redlock.Conn
	gate <-chan struct{}
}

// Listen passes the subscriptions on to the Conn's Listen once the gate
// is open.
func (c gatedSubscriptions) Listen(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error {
	gated := make(chan string)
	go func() {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return
		}
		for {
			select {
			case ch := <-subscribe:
				select {
				case gated <- ch:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return c.Conn.(redlock.Listener).Listen(ctx, gated, unsubscribe, onMessage)
}

// A waiter for many keys at once (here every permit of a semaphore of
// 300) has every one of their channels subscribed on the nodes, and every
// one ends once nobody waits and the linger passes. Before, a node's queue
// of 256 subscription changes dropped the rest: the waiter polled for
// the permits whose channels it missed, and dropped ends left channels
// subscribed for the life of the connection.
func TestAcquire_manyChannelsAllSubscribedAndAllEnded(t *testing.T) {
	const permits = 300
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		// The permits outlast the test: one that lapsed would grant the
		// waiter, whose channels would then end before all were counted.
		holder := newClient(t, cluster, a, &redlock.Options{TTL: 30 * time.Second, NodeTimeout: 300 * time.Millisecond})
		waiter := newClient(t, cluster, a, fast())
		var held []*redlock.Lock
		for range permits {
			lock, err := holder.TryAcquire(bg, "big", redlock.WithLimit(permits))
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, lock)
		}
		got := acquireLater(waiter, "big", redlock.WithLimit(permits))
		node := cluster.Node(0)
		subscribed := func() int {
			v, err := node.Do(bg, "PUBSUB", "CHANNELS", "redlock:released:*")
			if err != nil {
				t.Fatal(err)
			}
			if v == "" {
				return 0
			}
			return strings.Count(v, "\n") + 1
		}
		// Each permit's channel, and the waiter's own for it.
		last, began := 0, time.Now()
		eventually(t, "every permit's channels subscribed", func() bool {
			last = subscribed()
			return last == 2*permits
		})
		t.Logf("%d channels subscribed in %v", last, time.Since(began))
		if err := held[0].Release(bg); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-got:
			if l == nil {
				t.Fatal("the waiter was not granted a permit")
			}
			l.Release(bg)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter was not granted the permit released")
		}
		for _, l := range held[1:] {
			l.Release(bg)
		}
		eventually(t, "every channel unsubscribed after the linger", func() bool { return subscribed() == 0 })
	})
}

// A release announced while the nodes had dropped the waiter's
// subscriptions (CLIENT KILL TYPE pubsub, a connection that failed) is
// not missed: once the nodes confirm the subscriptions made again, the
// waiter tries again, long before its retry delay. Before, it slept
// through its whole retry pause with the key free, and so did every
// waiter queued behind it.
func TestAcquire_releaseWhileTheSubscriptionsAreDownIsNotMissed(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, lasting())
		opts := fast()
		opts.Retry = redlock.Jittered(time.Minute, time.Minute)
		waiter := newClient(t, cluster, a, opts)
		lock := take(t, holder, "dropped")
		// The waiter's first attempt, refused, and the one its
		// subscription's confirmation makes; then it waits a minute (an
		// attempt more now and then changes nothing).
		var attempts atomic.Int32
		got := acquireLater(waiter, "dropped", redlock.WithRetryNotify(func(error) { attempts.Add(1) }))
		eventually(t, "the waiter subscribed and waiting out its retry pause", func() bool {
			return attempts.Load() >= 2 && waiter.Listening("dropped") == 1
		})
		for _, n := range cluster.Nodes() {
			do(t, n, "CLIENT", "KILL", "TYPE", "pubsub")
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		wantWoken(t, got, "the waiter whose subscriptions were dropped")
	})
}

package redlock_test

import (
	"context"
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
		holder := newClient(t, cluster, a, fast())
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

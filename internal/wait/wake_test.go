package wait

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// recordingListener is a node's Listener that records the channels it is
// asked to subscribe to, in order.
type recordingListener struct{ subscribed chan string }

func (l recordingListener) Listen(ctx context.Context, subscribe, unsubscribe <-chan string, _ func(channel, payload string)) error {
	for {
		select {
		case ch := <-subscribe:
			l.subscribed <- ch
		case <-unsubscribe:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// A waiter's channel named for its client is subscribed before the key's
// channel, on the same connection: a node serves a connection's
// subscriptions in order, so that once the key's channel is subscribed, a
// release that names the client cannot go unheard.
func TestWaker_subscribesTheNamedChannelFirst(t *testing.T) {
	l := recordingListener{subscribed: make(chan string, 4)}
	w := NewWaker([]Listener{l}, 1, "client-1", wire.Layout{}, fixed(time.Millisecond))
	defer w.Close()
	_, stop := w.ListenFor("job", false)
	defer stop()
	channel := wire.Layout{}.ReleaseChannel("job")
	for i, want := range []string{channel + " client-1", channel} {
		select {
		case got := <-l.subscribed:
			if got != want {
				t.Fatalf("subscription %d: %q, want %q", i+1, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("subscription %d (%q) never asked for", i+1, want)
		}
	}
}

// woken reports whether wake holds a signal, taking it.
func woken(wake *Wakeup) bool {
	select {
	case <-wake.Now():
		return true
	default:
		return false
	}
}

// A release that names the client first wakes its waiter at once; one that
// names it second, only once the first named had its turn to try, unless
// another node names it first meanwhile.
func TestWaker_clientNamedSecondLetsTheFirstTry(t *testing.T) {
	l := recordingListener{subscribed: make(chan string, 4)}
	w := NewWaker([]Listener{l}, 3, "me", wire.Layout{}, fixed(time.Hour))
	defer w.Close()
	wake, stop := w.ListenFor("job", false)
	defer stop()
	named := wire.Layout{}.ReleaseChannel("job") + " me"

	w.deliver(0, named, "t1 me other")
	if !woken(wake) {
		t.Fatal("named first: not woken at once")
	}
	if p := wake.Passed(); p != "" {
		t.Fatalf("named first: Passed %q, want none", p)
	}
	w.deliver(0, named, "t2 other me")
	w.deliver(0, named, "t2 other me")
	if woken(wake) {
		t.Fatal("named second by two nodes: woken at once, want the first named to try first")
	}
	w.deliver(0, named, "t2 me other")
	if !woken(wake) {
		t.Fatal("named second, then first by another node: not woken at once")
	}
	w.deliver(0, named, "t2 other me")
	if woken(wake) {
		t.Fatal("woken twice for one release")
	}
}

// The client named second wakes its waiter on its own once the delay has
// passed: the first named may never try.
func TestWaker_clientNamedSecondWakesAfterTheDelay(t *testing.T) {
	l := recordingListener{subscribed: make(chan string, 4)}
	const behind = 20 * time.Millisecond
	w := NewWaker([]Listener{l}, 3, "me", wire.Layout{}, fixed(behind))
	defer w.Close()
	wake, stop := w.ListenFor("job", false)
	defer stop()
	start := time.Now()
	w.deliver(0, wire.Layout{}.ReleaseChannel("job")+" me", "t1 other me")
	select {
	case <-wake.Now():
		if took := time.Since(start); took < behind {
			t.Fatalf("woken after %v, want %v at least", took, behind)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("named second: never woken")
	}
	if p := wake.Passed(); p != "other" {
		t.Fatalf("Passed %q, want the client named first, which let its turn pass", p)
	}
	if p := wake.Passed(); p != "" {
		t.Fatalf("Passed again %q, want it told once", p)
	}
}

// A subscription's confirmation by a quorum wakes a waiter at once, as a
// release that names nobody would; one whose last attempt was queued
// behind another client only the delay later, so that the client ahead,
// whom the releases name first, takes the key in its turn.
func TestWaker_confirmationLetsTheClientAheadTryFirst(t *testing.T) {
	const behind = 50 * time.Millisecond
	for _, second := range []bool{false, true} {
		l := recordingListener{subscribed: make(chan string, 4)}
		w := NewWaker([]Listener{l}, 1, "me", wire.Layout{}, fixed(behind))
		channel := wire.Layout{}.ReleaseChannel("job")
		wake, stop := w.ListenFor("job", second)
		start := time.Now()
		w.deliver(0, channel, "")
		if got := woken(wake); got == second {
			t.Fatalf("second %v: woken at once by the confirmation: %v", second, got)
		}
		if second {
			select {
			case <-wake.Now():
				if took := time.Since(start); took < behind {
					t.Fatalf("woken after %v, want %v at least", took, behind)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("second: never woken by the confirmation")
			}
		}
		stop()
		w.Close()
	}
}

// A release that names a second waiter first wakes it at once, and the
// confirmation's later wake-up is dropped: one release, one try.
func TestWaker_releaseBeforeTheLaterWakeupReplacesIt(t *testing.T) {
	l := recordingListener{subscribed: make(chan string, 4)}
	w := NewWaker([]Listener{l}, 1, "me", wire.Layout{}, fixed(time.Hour))
	defer w.Close()
	channel := wire.Layout{}.ReleaseChannel("job")
	wake, stop := w.ListenFor("job", true)
	defer stop()
	w.deliver(0, channel, "")
	w.deliver(0, channel+" me", "t1 me")
	if !woken(wake) {
		t.Fatal("named first: not woken at once")
	}
	w.mu.Lock()
	pending := wake.confirmed != nil
	w.mu.Unlock()
	if pending {
		t.Fatal("the confirmation's wake-up still pending after the release woke it")
	}
}

// A waiter on several keys that leaves with a wake-up unused passes it on
// to the next waiter on the key whose release it came from, not on the
// first key it stops listening to.
func TestWaker_unusedWakeupGoesOnWhereItCameFrom(t *testing.T) {
	l := recordingListener{subscribed: make(chan string, 16)}
	w := NewWaker([]Listener{l}, 1, "me", wire.Layout{}, fixed(time.Hour))
	defer w.Close()
	both, stopBoth := w.ListenForAll([]string{"k1", "k2"}, false)
	onK1, stopK1 := w.ListenFor("k1", false)
	defer stopK1()
	onK2, stopK2 := w.ListenFor("k2", false)
	defer stopK2()
	w.deliver(0, wire.Layout{}.ReleaseChannel("k2"), "t1")
	if !woken(both) {
		t.Fatal("the oldest waiter on k2 was not woken by its release")
	}
	w.mu.Lock()
	w.signalFirstLocked(wire.Layout{}.ReleaseChannel("k2")) // hold the wake-up again, unused
	w.mu.Unlock()
	stopBoth()
	if woken(onK1) {
		t.Fatal("the wake-up from k2's release went on to a waiter on k1")
	}
	if !woken(onK2) {
		t.Fatal("the wake-up from k2's release did not go on to the next waiter on k2")
	}
}

// fixed is a Waker's behind of a client whose node timeout stays d.
func fixed(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// A node that confirms a subscription again subscribed again after its
// connection failed, and a release it announced meanwhile went unheard:
// the waiters are told to try, as by a quorum's first confirmations. A
// node's first confirmation past the quorum tells nothing more.
func TestWaker_resubscriptionWakesTheWaiter(t *testing.T) {
	var ls []Listener
	for range 3 {
		ls = append(ls, recordingListener{subscribed: make(chan string, 8)})
	}
	w := NewWaker(ls, 2, "me", wire.Layout{}, fixed(time.Millisecond))
	defer w.Close()
	channel := wire.Layout{}.ReleaseChannel("job")
	wake, stop := w.ListenFor("job", false)
	defer stop()
	w.deliver(0, channel, "")
	if woken(wake) {
		t.Fatal("woken by one confirmation of three, before a quorum")
	}
	w.deliver(1, channel, "")
	if !woken(wake) {
		t.Fatal("not woken by a quorum's confirmations")
	}
	w.deliver(2, channel, "")
	if woken(wake) {
		t.Fatal("woken by the third node's first confirmation")
	}
	w.deliver(0, channel, "")
	if !woken(wake) {
		t.Fatal("not woken by a node's second confirmation: a resubscription")
	}
}

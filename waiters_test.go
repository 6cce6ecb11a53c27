package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestWaiters_firstComeFirstServed(t *testing.T) {
	tr := newWaiters()
	ctx := context.Background()
	if !tr.take(ctx, "k", nil).taken {
		t.Fatal("free turn not taken")
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			if tr.take(ctx, "k", nil).taken {
				order <- i
				tr.giveBack("k", false)
			}
		}()
		time.Sleep(20 * time.Millisecond) // queue them in order
	}
	// Another key is independent.
	if !tr.take(ctx, "other", nil).taken {
		t.Fatal("other key blocked")
	}
	tr.giveBack("other", false)
	select {
	case i := <-order:
		t.Fatalf("waiter %d got a turn that was not given back", i)
	case <-time.After(50 * time.Millisecond):
	}
	tr.giveBack("k", false)
	for want := range 3 {
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("turn %d went to waiter %d", want, got)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("turn %d never handed over", want)
		}
	}
	// The last waiter gives its turn back after it reported it.
	s := tr.shard("k")
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		left := len(s.keys)
		s.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("queue left behind")
		}
	}
}

func TestWaiters_cancelledWaiterPassesTurnOn(t *testing.T) {
	tr := newWaiters()
	if !tr.take(context.Background(), "k", nil).taken {
		t.Fatal("free turn not taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan bool)
	go func() { gaveUp <- tr.take(ctx, "k", nil).taken }()
	got := make(chan bool)
	time.Sleep(20 * time.Millisecond)
	go func() { got <- tr.take(context.Background(), "k", nil).taken }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if <-gaveUp {
		t.Fatal("cancelled waiter got the turn")
	}
	tr.giveBack("k", false)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("second waiter did not get the turn")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("turn lost with the cancelled waiter")
	}
}

// The attempt of the goroutine whose turn starts with the lock held here is
// offered to the release, once; a turn that starts otherwise offers nothing.
func TestWaiters_handoffOfferedOnlyWhenHeldHere(t *testing.T) {
	tr := newWaiters()
	if !tr.take(context.Background(), "k", nil).taken {
		t.Fatal("free turn not taken")
	}
	holding, freed := wantOfferTakenOnce(t, tr)
	wantOfferedAgainWhileHeld(t, tr, freed)
	wantNoOfferOnceReleased(t, tr, holding, freed)
}

// queueFor has a goroutine wait for the turn on "k" with offer, and returns
// where its turn arrives once it is queued.
func queueFor(tr *waiters, offer *handoff) <-chan turn {
	got := make(chan turn, 1)
	go func() { got <- tr.take(context.Background(), "k", offer) }()
	time.Sleep(20 * time.Millisecond) // queue it
	return got
}

// wantOfferTakenOnce: the caller holds the turn on "k"; it acquires the
// lock, and the next waiter's offer is parked for the release, once. It
// returns the lock's holding number and the channel its release closes.
func wantOfferTakenOnce(t *testing.T, tr *waiters) (uint64, <-chan struct{}) {
	t.Helper()
	offer := &handoff{sent: make(chan struct{})}
	got := queueFor(tr, offer)
	if h := tr.takeHandoff("k"); h != nil {
		t.Fatal("an offer was taken before the turn started")
	}
	holding := tr.giveBack("k", true)
	tn := <-got
	if !tn.taken || !tn.heldHere || tn.freed == nil || holding == 0 {
		t.Fatalf("turn = %+v, holding %d, want taken with the lock held here", tn, holding)
	}
	if h := tr.takeHandoff("k"); h != offer {
		t.Fatalf("takeHandoff = %p, want the waiter's offer %p", h, offer)
	}
	if offer.withdraw() {
		t.Fatal("an offer the release took could be withdrawn")
	}
	if h := tr.takeHandoff("k"); h != nil {
		t.Fatal("an offer was taken twice")
	}
	return holding, tn.freed
}

// wantOfferedAgainWhileHeld: the holder's turn ends without acquiring (say
// its attempt failed): the lock is still held here, so the next turn
// offers again.
func wantOfferedAgainWhileHeld(t *testing.T, tr *waiters, freed <-chan struct{}) {
	t.Helper()
	second := &handoff{sent: make(chan struct{})}
	got := queueFor(tr, second)
	tr.giveBack("k", false)
	if tn := <-got; !tn.taken || !tn.heldHere || tn.freed != freed {
		t.Fatalf("turn = %+v, want taken with the same lock held here", tn)
	}
	if h := tr.takeHandoff("k"); h != second {
		t.Fatal("the second waiter's offer was not parked")
	}
}

// wantNoOfferOnceReleased: once released, a turn starts without the lock
// held here, and a stale release of an older lock changes nothing.
func wantNoOfferOnceReleased(t *testing.T, tr *waiters, holding uint64, freed <-chan struct{}) {
	t.Helper()
	tr.released("k", holding)
	select {
	case <-freed:
	default:
		t.Fatal("released did not close freed")
	}
	third := &handoff{sent: make(chan struct{})}
	got := queueFor(tr, third)
	tr.giveBack("k", false)
	if tn := <-got; !tn.taken || tn.heldHere {
		t.Fatalf("turn = %+v, want taken, lock not held here", tn)
	}
	if h := tr.takeHandoff("k"); h != nil {
		t.Fatal("an offer was taken though the lock was not held here")
	}
	tr.giveBack("k", false)
	if q := tr.shard("k").keys["k"]; q != nil {
		t.Fatalf("state left behind for a key nobody holds or waits for: %+v", q)
	}
}

// A goroutine that arrives while this client holds the lock and nobody
// waits starts its turn knowing the lock is held here.
func TestWaiters_newcomerSeesLockHeldHere(t *testing.T) {
	tr := newWaiters()
	tr.take(context.Background(), "k", nil)
	holding := tr.giveBack("k", true)
	offer := &handoff{sent: make(chan struct{})}
	tn := tr.take(context.Background(), "k", offer)
	if !tn.taken || !tn.heldHere || tn.freed == nil {
		t.Fatalf("turn = %+v, want taken with the lock held here", tn)
	}
	if h := tr.takeHandoff("k"); h != offer {
		t.Fatal("the newcomer's offer was not parked")
	}
	tr.giveBack("k", true)    // the newcomer got the lock from the handoff
	tr.released("k", holding) // the older lock's release: no effect
	if q := tr.shard("k").keys["k"]; q == nil || !q.heldHere {
		t.Fatal("an older lock's release cleared the newer lock's state")
	}
}

func TestWaiters_trailingReleaseOutlivesTheTurn(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := pipeClient(t, cluster, pipeAdapters[0].conn)
	// A release's fan-out, one of its nodes unanswered: that node is
	// paused.
	if err := cluster.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Node(2).Resume() })
	_, _, unfinished := c.trackedFanout(context.Background(), 5*time.Second, releaser("k", "tok"), nil, nodes.IsOne, c.decided)
	lag := unfinished.Lagging()
	if lag == nil {
		t.Fatal("the paused node's release did not trail")
	}
	w := newWaiters()
	if !w.take(context.Background(), "k", nil).taken {
		t.Fatal("free turn not taken")
	}
	w.addTrailing("k", lag)
	w.giveBack("k", false)
	if got := w.trailing("k"); got != lag {
		t.Fatalf("trailing release %p after the turn ended, want %p", got, lag)
	}
	if w.busy("k") {
		t.Error("busy with only a trailing release")
	}
	// A new turn while the release trails: it sees the release.
	if tn := w.take(context.Background(), "k", nil); !tn.taken || tn.heldHere {
		t.Fatalf("turn %+v, want taken, not held here", tn)
	}
	// Every node answered the release: the record goes, and once the turn
	// is given back, the key's state too.
	if err := cluster.Node(2).Resume(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); w.trailing("k") != nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("trailing release kept after every node answered")
		}
	}
	w.giveBack("k", false)
	if n := len(w.shard("k").keys); n != 0 {
		t.Errorf("%d keys' state left behind", n)
	}
}

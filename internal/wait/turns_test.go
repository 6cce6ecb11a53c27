package wait

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// testOffer is an offer that only tells whether it was taken or withdrawn.
type testOffer struct{ state atomic.Int32 } // 0 offered, 1 taken, 2 withdrawn

func (o *testOffer) Take() bool     { return o.state.CompareAndSwap(0, 1) }
func (o *testOffer) Withdraw() bool { return o.state.CompareAndSwap(0, 2) }

func TestWaiters_firstComeFirstServed(t *testing.T) {
	tr := NewTurns()
	ctx := context.Background()
	if !tr.Take(ctx, "k", nil).Taken {
		t.Fatal("free turn not taken")
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			if tr.Take(ctx, "k", nil).Taken {
				order <- i
				tr.GiveBack("k", false)
			}
		}()
		time.Sleep(20 * time.Millisecond) // queue them in order
	}
	// Another key is independent.
	if !tr.Take(ctx, "other", nil).Taken {
		t.Fatal("other key blocked")
	}
	tr.GiveBack("other", false)
	select {
	case i := <-order:
		t.Fatalf("waiter %d got a turn that was not given back", i)
	case <-time.After(50 * time.Millisecond):
	}
	tr.GiveBack("k", false)
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
	tr := NewTurns()
	if !tr.Take(context.Background(), "k", nil).Taken {
		t.Fatal("free turn not taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan bool)
	go func() { gaveUp <- tr.Take(ctx, "k", nil).Taken }()
	got := make(chan bool)
	time.Sleep(20 * time.Millisecond)
	go func() { got <- tr.Take(context.Background(), "k", nil).Taken }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if <-gaveUp {
		t.Fatal("cancelled waiter got the turn")
	}
	tr.GiveBack("k", false)
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
	tr := NewTurns()
	if !tr.Take(context.Background(), "k", nil).Taken {
		t.Fatal("free turn not taken")
	}
	holding, freed := wantOfferTakenOnce(t, tr)
	wantOfferedAgainWhileHeld(t, tr, freed)
	wantNoOfferOnceReleased(t, tr, holding, freed)
}

// queueFor has a goroutine wait for the turn on "k" with offer, and returns
// where its turn arrives once it is queued.
func queueFor(tr *Turns, offer Offer) <-chan Turn {
	got := make(chan Turn, 1)
	go func() { got <- tr.Take(context.Background(), "k", offer) }()
	time.Sleep(20 * time.Millisecond) // queue it
	return got
}

// wantOfferTakenOnce: the caller holds the turn on "k"; it acquires the
// lock, and the next waiter's offer is parked for the release, once. It
// returns the lock's holding number and the channel its release closes.
func wantOfferTakenOnce(t *testing.T, tr *Turns) (uint64, <-chan struct{}) {
	t.Helper()
	offer := &testOffer{}
	got := queueFor(tr, offer)
	if h := tr.TakeOffer("k"); h != nil {
		t.Fatal("an offer was taken before the turn started")
	}
	holding := tr.GiveBack("k", true)
	tn := <-got
	if !tn.Taken || !tn.HeldHere || tn.Freed == nil || holding == 0 {
		t.Fatalf("turn = %+v, holding %d, want taken with the lock held here", tn, holding)
	}
	if h := tr.TakeOffer("k"); h != Offer(offer) {
		t.Fatalf("takeHandoff = %p, want the waiter's offer %p", h, offer)
	}
	if offer.Withdraw() {
		t.Fatal("an offer the release took could be withdrawn")
	}
	if h := tr.TakeOffer("k"); h != nil {
		t.Fatal("an offer was taken twice")
	}
	return holding, tn.Freed
}

// wantOfferedAgainWhileHeld: the holder's turn ends without acquiring (say
// its attempt failed): the lock is still held here, so the next turn
// offers again.
func wantOfferedAgainWhileHeld(t *testing.T, tr *Turns, freed <-chan struct{}) {
	t.Helper()
	second := &testOffer{}
	got := queueFor(tr, second)
	tr.GiveBack("k", false)
	if tn := <-got; !tn.Taken || !tn.HeldHere || tn.Freed != freed {
		t.Fatalf("turn = %+v, want taken with the same lock held here", tn)
	}
	if h := tr.TakeOffer("k"); h != Offer(second) {
		t.Fatal("the second waiter's offer was not parked")
	}
}

// wantNoOfferOnceReleased: once released, a turn starts without the lock
// held here, and a stale release of an older lock changes nothing.
func wantNoOfferOnceReleased(t *testing.T, tr *Turns, holding uint64, freed <-chan struct{}) {
	t.Helper()
	tr.Released("k", holding)
	select {
	case <-freed:
	default:
		t.Fatal("released did not close freed")
	}
	third := &testOffer{}
	got := queueFor(tr, third)
	tr.GiveBack("k", false)
	if tn := <-got; !tn.Taken || tn.HeldHere {
		t.Fatalf("turn = %+v, want taken, lock not held here", tn)
	}
	if h := tr.TakeOffer("k"); h != nil {
		t.Fatal("an offer was taken though the lock was not held here")
	}
	tr.GiveBack("k", false)
	if q := tr.shard("k").keys["k"]; q != nil {
		t.Fatalf("state left behind for a key nobody holds or waits for: %+v", q)
	}
}

// A goroutine that arrives while this client holds the lock and nobody
// waits starts its turn knowing the lock is held here.
func TestWaiters_newcomerSeesLockHeldHere(t *testing.T) {
	tr := NewTurns()
	tr.Take(context.Background(), "k", nil)
	holding := tr.GiveBack("k", true)
	offer := &testOffer{}
	tn := tr.Take(context.Background(), "k", offer)
	if !tn.Taken || !tn.HeldHere || tn.Freed == nil {
		t.Fatalf("turn = %+v, want taken with the lock held here", tn)
	}
	if h := tr.TakeOffer("k"); h != Offer(offer) {
		t.Fatal("the newcomer's offer was not parked")
	}
	tr.GiveBack("k", true)    // the newcomer got the lock from the handoff
	tr.Released("k", holding) // the older lock's release: no effect
	if q := tr.shard("k").keys["k"]; q == nil || !q.heldHere {
		t.Fatal("an older lock's release cleared the newer lock's state")
	}
}

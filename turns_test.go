package redlock

import (
	"context"
	"testing"
	"time"
)

func TestTurns_firstComeFirstServed(t *testing.T) {
	tr := newTurns()
	ctx := context.Background()
	if ok, _ := tr.take(ctx, "k"); !ok {
		t.Fatal("free turn not taken")
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			if ok, _ := tr.take(ctx, "k"); ok {
				order <- i
				tr.giveBack("k")
			}
		}()
		time.Sleep(20 * time.Millisecond) // queue them in order
	}
	// Another key is independent.
	if ok, _ := tr.take(ctx, "other"); !ok {
		t.Fatal("other key blocked")
	}
	tr.giveBack("other")
	select {
	case i := <-order:
		t.Fatalf("waiter %d got a turn that was not given back", i)
	case <-time.After(50 * time.Millisecond):
	}
	tr.giveBack("k")
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
	s := tr.shard("k")
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queues) != 0 {
		t.Error("queue left behind")
	}
}

func TestTurns_cancelledWaiterPassesTurnOn(t *testing.T) {
	tr := newTurns()
	if ok, _ := tr.take(context.Background(), "k"); !ok {
		t.Fatal("free turn not taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan bool)
	go func() { ok, _ := tr.take(ctx, "k"); gaveUp <- ok }()
	got := make(chan bool)
	time.Sleep(20 * time.Millisecond)
	go func() { ok, _ := tr.take(context.Background(), "k"); got <- ok }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if <-gaveUp {
		t.Fatal("cancelled waiter got the turn")
	}
	tr.giveBack("k")
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("second waiter did not get the turn")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("turn lost with the cancelled waiter")
	}
}

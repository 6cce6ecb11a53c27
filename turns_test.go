package redlock

import (
	"context"
	"testing"
	"time"
)

func TestTurns_firstComeFirstServed(t *testing.T) {
	tr := newTurns()
	ctx := context.Background()
	if !tr.take(ctx, "k").taken {
		t.Fatal("free turn not taken")
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			if tr.take(ctx, "k").taken {
				order <- i
				tr.giveBack("k", false)
			}
		}()
		time.Sleep(20 * time.Millisecond) // queue them in order
	}
	// Another key is independent.
	if !tr.take(ctx, "other").taken {
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
	s := tr.shard("k")
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queues) != 0 {
		t.Error("queue left behind")
	}
}

func TestTurns_cancelledWaiterPassesTurnOn(t *testing.T) {
	tr := newTurns()
	if !tr.take(context.Background(), "k").taken {
		t.Fatal("free turn not taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan bool)
	go func() { gaveUp <- tr.take(ctx, "k").taken }()
	got := make(chan bool)
	time.Sleep(20 * time.Millisecond)
	go func() { got <- tr.take(context.Background(), "k").taken }()
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

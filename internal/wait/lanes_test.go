package wait

import (
	"context"
	"testing"
	"time"
)

// Up to n goroutines hold a key's lanes at once; the next ones queue and
// get a lane in the order they came, as lanes are given back.
func TestLanes_nAtOnceThenInOrder(t *testing.T) {
	var l Lanes
	ctx := context.Background()
	first, _ := l.Take(ctx, "sem", 2)
	second, _ := l.Take(ctx, "sem", 2)
	if second <= first {
		t.Fatalf("tickets %d then %d, want rising", first, second)
	}
	got := make(chan int, 2)
	for i := range 2 {
		go func() {
			if _, taken := l.Take(ctx, "sem", 2); taken {
				got <- i
			}
		}()
		for l.queued("sem") != i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	select {
	case i := <-got:
		t.Fatalf("goroutine %d took a third lane of two", i)
	default:
	}
	for want := range 2 {
		l.GiveBack("sem")
		select {
		case i := <-got:
			if i != want {
				t.Fatalf("lane handed to goroutine %d, want %d (first come first served)", i, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("a lane given back never reached goroutine %d", want)
		}
	}
}

// A goroutine whose context ends in the queue takes no lane, and one
// handed a lane as its context ended passes it on.
func TestLanes_cancelledWaiterTakesNone(t *testing.T) {
	var l Lanes
	l.Take(context.Background(), "sem", 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() {
		_, taken := l.Take(ctx, "sem", 1)
		done <- taken
	}()
	for l.queued("sem") != 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if <-done {
		t.Fatal("a goroutine whose context ended took a lane")
	}
	l.GiveBack("sem")
	if _, taken := l.Take(context.Background(), "sem", 1); !taken {
		t.Fatal("the lane given back is lost")
	}
}

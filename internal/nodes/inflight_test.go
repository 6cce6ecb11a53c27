package nodes

import (
	"sync"
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestInflight_settledOnceEveryRequestAnswered(t *testing.T) {
	var r inflight
	if !closed(r.settled()) {
		t.Fatal("settled with no request under way: not closed")
	}
	r.add(2)
	idle := r.settled()
	r.done()
	if closed(idle) {
		t.Fatal("closed with one request of two still under way")
	}
	r.done()
	if !closed(idle) {
		t.Fatal("not closed once both requests were answered")
	}
}

// Requests may start while Drain waits (a sync.WaitGroup may not grow
// then: the race detector reported it when a client closed while an
// election observed).
func TestInflight_growsWhileWaitedFor(t *testing.T) {
	var r inflight
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for !closed(stop) {
				r.add(3)
				for range 3 {
					r.done()
				}
			}
		})
	}
	for range 1000 {
		select {
		case <-r.settled():
		case <-time.After(10 * time.Second):
			t.Fatal("never settled")
		}
	}
	close(stop)
	wg.Wait()
	if !closed(r.settled()) {
		t.Fatal("not settled once every request was answered")
	}
}

package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/internal/drivers"
)

// turnLock is an in-process lock for the runner's own counting, not a
// stand-in for Redis: each Acquire waits for its caller's turn, given in
// arrival order (a ticket lock), or, when barging, takes the lock at once
// whenever it is free.
type turnLock struct {
	mu      sync.Mutex
	cond    *sync.Cond
	held    bool
	next    int // the ticket served next
	tickets int // tickets handed out
	barging bool
}

func newTurnLock(barging bool) *turnLock {
	l := &turnLock{barging: barging}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *turnLock) Acquire(ctx context.Context, _ string) (any, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ticket := l.tickets
	l.tickets++
	for l.held || (!l.barging && ticket != l.next) {
		l.cond.Wait()
	}
	l.held = true
	l.next++
	return nil, nil
}

func (l *turnLock) Release(context.Context, any) error {
	l.mu.Lock()
	l.held = false
	l.mu.Unlock()
	l.cond.Broadcast()
	return nil
}

func (l *turnLock) Close() {}

// TestRun_againCountsGrantsToTheLastHolder checks the count of grants that
// went straight back to the goroutine that held a shared lock last: all of
// them with one goroutine, few when turns go in order (a goroutine can
// find no other waiting when it asks again, rarely).
func TestRun_againCountsGrantsToTheLastHolder(t *testing.T) {
	o := Options{Warmup: 20 * time.Millisecond, Duration: 100 * time.Millisecond, KeyPrefix: "t:"}
	for _, tc := range []struct {
		name     string
		workers  int
		min, max float64
	}{
		{"one goroutine", 1, 1, 1},
		{"goroutines in turn", 4, 0, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newTurnLock(false)
			r, err := Run(context.Background(), []drivers.Driver{d}, Case{Workers: tc.workers, Keys: SharedKey}, o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Cycles == 0 {
				t.Fatal("no cycles")
			}
			if got := r.PerCycle(float64(r.Again)); got < tc.min || got > tc.max {
				t.Errorf("again: %d of %d grants (%.3f), want a share from %g to %g", r.Again, r.Cycles, got, tc.min, tc.max)
			}
		})
	}
}

// TestRun_againIsNotCountedWithoutOneSharedLock checks that only cases of
// one shared plain lock count grants to the last holder.
func TestRun_againIsNotCountedWithoutOneSharedLock(t *testing.T) {
	o := Options{Warmup: 10 * time.Millisecond, Duration: 50 * time.Millisecond, KeyPrefix: "t:"}
	r, err := Run(context.Background(), []drivers.Driver{newTurnLock(true)}, Case{Workers: 1, Keys: KeyPerWorker}, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cycles == 0 || r.Again != 0 {
		t.Errorf("%d cycles, %d counted again; want cycles and none again", r.Cycles, r.Again)
	}
}

// slowLock is an in-process lock whose every Acquire takes d: a cycle
// longer than the runner's window.
type slowLock struct{ d time.Duration }

func (l slowLock) Acquire(ctx context.Context, _ string) (any, error) {
	t := time.NewTimer(l.d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (slowLock) Release(context.Context, any) error { return nil }

func (slowLock) Close() {}

// TestRun_minCyclesExtendsTheWindow checks that a window shorter than a
// cycle is extended until it has counted MinCycles cycles.
func TestRun_minCyclesExtendsTheWindow(t *testing.T) {
	o := Options{Warmup: time.Millisecond, Duration: 10 * time.Millisecond, MinCycles: 2, KeyPrefix: "t:"}
	r, err := Run(context.Background(), []drivers.Driver{slowLock{40 * time.Millisecond}}, Case{Workers: 1, Keys: KeyPerWorker}, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cycles < 2 || r.Elapsed < 40*time.Millisecond {
		t.Errorf("%d cycles in %v, want at least 2 in a window extended past one cycle", r.Cycles, r.Elapsed)
	}
}

// firstSlow is a lock whose first acquisition by each goroutine takes
// first, as a client's first does while it connects, and every later one
// nothing.
type firstSlow struct {
	first time.Duration
	done  *sync.Map
}

func (l firstSlow) Acquire(ctx context.Context, name string) (any, error) {
	if _, seen := l.done.LoadOrStore(name, true); seen {
		return nil, nil
	}
	return slowLock{l.first}.Acquire(ctx, name)
}

func (firstSlow) Release(context.Context, any) error { return nil }

func (firstSlow) Close() {}

// TestRun_warmEveryWorkerKeepsFirstCyclesOut checks that with
// WarmEveryWorker the goroutines' first cycles, longer than the warm-up,
// end before the window and are not measured; without it they are.
func TestRun_warmEveryWorkerKeepsFirstCyclesOut(t *testing.T) {
	for _, warmAll := range []bool{false, true} {
		o := Options{Warmup: time.Millisecond, Duration: 20 * time.Millisecond, MinCycles: 1, KeyPrefix: "t:", WarmEveryWorker: warmAll}
		d := firstSlow{first: 100 * time.Millisecond, done: &sync.Map{}}
		r, err := Run(context.Background(), []drivers.Driver{d}, Case{Workers: 4, Keys: KeyPerWorker}, o)
		if err != nil {
			t.Fatal(err)
		}
		slowSeen := r.Max >= 100*time.Millisecond
		if slowSeen == warmAll {
			t.Errorf("WarmEveryWorker %v: longest cycle measured %v, first cycles 100 ms", warmAll, r.Max)
		}
	}
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// history records the holdings of many goroutines, and how many held at
// once by a counter they share.
type history struct {
	mu       sync.Mutex
	holdings []holding
	now, max int
}

func (h *history) enter() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now++
	h.max = max(h.max, h.now)
	return time.Now()
}

func (h *history) leave(lock *redlock.Lock, start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now--
	h.holdings = append(h.holdings, holding{key: lock.Key(), fence: lock.Fence(), start: start, end: time.Now()})
}

// mostAtOnce returns the most holdings that overlap in time.
func mostAtOnce(holdings []holding) int {
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	for _, x := range holdings {
		events = append(events, event{x.start, 1}, event{x.end, -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	n, most := 0, 0
	for _, e := range events {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// A semaphore never has more holders than its limit, counted by a shared
// counter and by the overlap of the recorded holdings, each permit has one
// holder at a time with rising fencing tokens, and the semaphore admits
// that many at once: separate clients over both adapters, and goroutines
// of one client, contend for 3 permits.
func TestSemaphore_neverMoreThanLimit(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	const limit, workers = 3, 8
	var clients []*redlock.Client
	for i := range 4 {
		clients = append(clients, newClient(t, cluster, adapters[i%2], fast()))
	}
	var h history
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			client := clients[w%len(clients)]
			for ctx.Err() == nil {
				lock, err := client.Acquire(ctx, "sem", redlock.WithLimit(limit))
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("worker %d: %v", w, err)
					}
					return
				}
				start := h.enter()
				time.Sleep(5 * time.Millisecond)
				h.leave(lock, start)
				if err := lock.Release(bg); err != nil {
					t.Errorf("worker %d: release: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	most := mostAtOnce(h.holdings)
	t.Logf("%d holdings; at most %d at once by the counter, %d by the history", len(h.holdings), h.max, most)
	if h.max > limit || most > limit {
		t.Errorf("%d holders at once by the counter, %d by the history; the limit is %d", h.max, most, limit)
	}
	// The semaphore admits limit holders at once: the last releases of
	// the workers, or an attempt one of them gave up on, may still hold a
	// permit on a node for a moment.
	var held []*redlock.Lock
	for i := range limit {
		eventually(t, fmt.Sprintf("permit %d of %d held", i+1, limit), func() bool {
			l, err := clients[i].TryAcquire(bg, "sem", redlock.WithLimit(limit))
			if err == nil {
				held = append(held, l)
			}
			return err == nil
		})
	}
	for _, l := range held {
		l.Release(bg)
	}
	checkHoldings(t, h.holdings) // one holder per permit, fencing tokens in order
	for _, x := range h.holdings {
		if !strings.HasPrefix(x.key, "sem:permit:") {
			t.Fatalf("a permit's key is %q, want sem:permit:<i>", x.key)
		}
	}
}

// TryAcquire takes a free permit at once, fails when every permit is held,
// and gets the permit of a holder that expired without releasing it.
func TestSemaphore_fullThenExpired(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, fast())
		// first expires below; second is held to the end.
		first, err := client.TryAcquire(bg, "pool", redlock.WithLimit(2), redlock.WithTTL(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		second, err := client.TryAcquire(bg, "pool", redlock.WithLimit(2), redlock.WithTTL(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if first.Key() == second.Key() {
			t.Fatalf("two holders of permit %q", first.Key())
		}
		waitForKey(t, cluster, first.WireKey(), first.Token())
		_, err = client.TryAcquire(bg, "pool", redlock.WithLimit(2))
		if !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "all 2 permits") {
			t.Fatalf("a third holder: %v, want ErrNotAcquired, all 2 permits held", err)
		}
		time.Sleep(time.Until(first.Until()) + 100*time.Millisecond) // first expires, unreleased
		third, err := client.TryAcquire(bg, "pool", redlock.WithLimit(2))
		if err != nil {
			t.Fatalf("the expired holder's permit: %v", err)
		}
		if third.Key() != first.Key() {
			t.Errorf("got permit %q, want the expired %q", third.Key(), first.Key())
		}
		if third.Fence() <= first.Fence() {
			t.Errorf("fencing token %d after %d on one permit", third.Fence(), first.Fence())
		}
		for _, l := range []*redlock.Lock{second, third} {
			if err := l.Release(bg); err != nil {
				t.Fatal(err)
			}
		}
		only, err := client.TryAcquire(bg, "single", redlock.WithLimit(1))
		if err != nil {
			t.Fatal(err)
		}
		defer only.Release(bg)
		waitForKey(t, cluster, only.WireKey(), only.Token())
		if _, err := client.TryAcquire(bg, "single", redlock.WithLimit(1)); err == nil || !strings.Contains(err.Error(), "the one permit of") {
			t.Errorf("a second holder of a semaphore of one: %v, want the one permit held", err)
		}
	})
}

// A waiter for a full semaphore is woken by the release of any permit, long
// before its retry delay.
func TestSemaphore_releaseWakesWaiter(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, lasting())
		slow := redlock.Jittered(time.Minute, time.Minute) // only a wake-up can serve it
		waiter := newClient(t, cluster, a, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, Retry: slow})
		var held []*redlock.Lock
		for range 3 {
			l, err := holder.TryAcquire(bg, "workers", redlock.WithLimit(3))
			if err != nil {
				t.Fatal(err)
			}
			waitForKey(t, cluster, l.WireKey(), l.Token())
			held = append(held, l)
		}
		got := make(chan *redlock.Lock, 1)
		go func() {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			l, err := waiter.Acquire(ctx, "workers", redlock.WithLimit(3))
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			got <- l
		}()
		// The waiter tried every permit, and waits.
		awaitPermitQueues(t, cluster, "workers", 3, []string{waiter.ID()})
		awaitListening(t, cluster, waiter, []string{"workers:permit:1", "workers:permit:2", "workers:permit:3"})
		if err := held[1].Release(bg); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-got:
			if l == nil {
				t.FailNow()
			}
			if l.Key() != held[1].Key() {
				t.Errorf("waiter got %q, want the released %q", l.Key(), held[1].Key())
			}
			l.Release(bg)
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter was not woken by the release")
		}
		held[0].Release(bg)
		held[2].Release(bg)
	})
}

// Goroutines of one client waiting for a full semaphore are served in the
// order they called Acquire.
func TestSemaphore_oneClientsWaitersInOrder(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	slow := redlock.Jittered(time.Minute, time.Minute)
	client := newClient(t, cluster, adapters[1], &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, Retry: slow})
	lock, err := holder.TryAcquire(bg, "one", redlock.WithLimit(1))
	if err != nil {
		t.Fatal(err)
	}
	waitForKey(t, cluster, lock.WireKey(), lock.Token())
	order := make(chan int, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			l, err := client.Acquire(ctx, "one", redlock.WithLimit(1))
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			order <- i
			l.Release(bg)
		})
		time.Sleep(100 * time.Millisecond) // one after the other
	}
	lock.Release(bg)
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("served in order %v, want [0 1 2]", got)
	}
}

// Goroutines of one client that pass one permit from hand to hand never
// miss its release: each waiter gets the permit long before its retry delay,
// over hundreds of hand-overs. The nodes may announce a release before the
// releasing goroutine has seen its quorum, so that a waiter woken by the
// announcement still finds the permit held here; the release that follows
// in the process must wake it then.
func TestSemaphore_oneClientsHandOversNeverStall(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		slow := redlock.Jittered(time.Minute, time.Minute) // only a wake-up can serve a waiter
		client := newClient(t, cluster, a, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, Retry: slow})
		// handOvers is how many times the permit changes hands: a release
		// was missed in 2 to 10 in a hundred. stallBound is how long a
		// waiter may wait for its turn among workers: the others' holdings
		// and hand-overs, a small fraction of the retry delay.
		const workers, handOvers, stallBound = 4, 300, 10 * time.Second
		ctx, stop := context.WithCancel(bg)
		defer stop()
		var served atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for served.Load() < handOvers {
					wait, cancel := context.WithTimeout(ctx, stallBound)
					start := time.Now()
					lock, err := client.Acquire(wait, "baton", redlock.WithLimit(1))
					cancel()
					if ctx.Err() != nil {
						return // another worker failed
					}
					if err != nil {
						t.Errorf("worker %d, after %d hand-overs: no permit after %s: %v",
							w, served.Load(), time.Since(start).Round(time.Millisecond), err)
						stop()
						return
					}
					served.Add(1)
					if err := lock.Release(bg); err != nil {
						t.Errorf("worker %d: release: %v", w, err)
						stop()
						return
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%d hand-overs", served.Load())
	})
}

// A limit out of range, or a name whose permits' keys would be too long,
// fails at once and writes nothing on the nodes.
func TestSemaphore_badInput(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	client := newClient(t, cluster, adapters[0], fast())
	for _, limit := range []int{0, -1, redlock.MaxLimit + 1} {
		if _, err := client.TryAcquire(bg, "bad", redlock.WithLimit(limit)); !errors.Is(err, redlock.ErrInvalidOptions) {
			t.Errorf("limit %d: %v, want ErrInvalidOptions", limit, err)
		}
	}
	long := strings.Repeat("k", 4090)
	if _, err := client.Acquire(bg, long, redlock.WithLimit(10)); !errors.Is(err, redlock.ErrInvalidKey) {
		t.Errorf("a name whose permit keys are too long: %v, want ErrInvalidKey", err)
	}
	if keys := do(t, cluster.Node(0), "KEYS", "*permit*"); keys != "" {
		t.Errorf("keys left on the node after bad calls: %s", keys)
	}
}

// A lock of one client does not queue behind the client's goroutines
// waiting for a permit of a semaphore, whatever its name: not even a name
// such as the one that the semaphore's turn once had, a NUL byte, "permits",
// a NUL byte and the semaphore's name.
func TestSemaphore_turnApartFromLocks(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	client := newClient(t, cluster, adapters[1], fast())
	permit, err := holder.TryAcquire(bg, "tk", redlock.WithLimit(1), redlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer permit.Release(bg)
	waitForKey(t, cluster, permit.WireKey(), permit.Token())
	before := scriptCalls(t, cluster)
	waiting, stopWaiting := context.WithCancel(bg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := client.Acquire(waiting, "tk", redlock.WithLimit(1)); !errors.Is(err, context.Canceled) {
			t.Errorf("the semaphore's waiter: %v, want context.Canceled", err)
		}
	}()
	defer func() { <-done }()
	defer stopWaiting()
	// Its first attempt shows that it has the semaphore's turn, until its
	// context ends.
	eventually(t, "the semaphore's waiter tried", func() bool { return scriptCalls(t, cluster) > before })

	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	lock, err := client.Acquire(ctx, "\x00permits\x00tk")
	if err != nil {
		t.Fatalf("a free lock while a goroutine waits for a permit: %v", err)
	}
	lock.Release(bg)
}

// An Acquire of a permit that gives up when its context ends says so in
// its message, as errors.Is does.
func TestSemaphore_gaveUpSaysWhy(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	waiter := newClient(t, cluster, adapters[1], fast())
	for _, limit := range []int{1, 2} {
		name := fmt.Sprint("full", limit)
		for range limit {
			l, err := holder.TryAcquire(bg, name, redlock.WithLimit(limit), redlock.WithTTL(20*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(bg)
		}
		ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
		_, err := waiter.Acquire(ctx, name, redlock.WithLimit(limit))
		cancel()
		wantGaveUp(t, err, context.DeadlineExceeded)
	}
}

// wantGaveUp fails the test unless err is that of an Acquire that gave up
// as its context ended with cause, and says so in its message: after the
// nodes' answers to its last attempt, or, when the context ended before
// the attempt reached any node (a loaded machine can take the whole
// deadline to start it), with that said.
func wantGaveUp(t *testing.T, err, cause error) {
	t.Helper()
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, cause) {
		t.Fatalf("%v, want ErrNotAcquired and %v", err, cause)
	}
	asked, unasked := "("+cause.Error()+")", cause.Error()+" before any node was asked"
	if msg := err.Error(); !strings.Contains(msg, asked) && !strings.Contains(msg, unasked) {
		t.Errorf("%q says neither %q nor %q", err, asked, unasked)
	}
}

// A client that holds every permit of a semaphore itself asks no node for
// one, and says so.
func TestSemaphore_everyPermitHeldHere(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	for _, limit := range []int{1, 2} {
		name := fmt.Sprint("mine", limit)
		for range limit {
			l, err := client.TryAcquire(bg, name, redlock.WithLimit(limit))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(bg)
		}
		_, err := client.TryAcquire(bg, name, redlock.WithLimit(limit))
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("limit %d: %v, want ErrNotAcquired", limit, err)
		}
		wantNotAsked(t, err, "held by this client")
		wantNotAsked(t, err, "no node was asked")
	}
}

package redlock_test

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Separate clients (processes, say) calling TryAcquire on one key in a
// loop win some of their calls instead of splitting the nodes' votes for
// ever: at least 20 of 64 clients' first 4,000 calls on 5 nodes win. A
// failed attempt used to return at the third refusal, with no pause, and
// the client's next attempt went out while the last one's requests and
// clean-up still queued on the slower nodes: each node granted a different
// client's, and about one call in 2,000 won (one in 15 to 30 now, under
// the race detector too). A budget of calls, not of time: the speed of
// the machine changes how many calls a second the clients make, hardly
// how many of them win.
func TestTryAcquire_separateClientsInALoopWin(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{})
	var clients []*redlock.Client
	for i := range 64 {
		clients = append(clients, newClient(t, cluster, adapters[i%2], fast()))
	}
	tryInALoop(t, clients, 1, 20, 4000)
}

// The goroutines of one Client calling TryAcquire on one key in a loop win
// some of their calls: at least 20 of the first 10,000 calls of 8 clients'
// 32 goroutines each. They used to split the votes among themselves as
// they do with other clients', and about one call in 10,000 won; now one
// goroutine of a Client tries at a time, and the others share its attempt.
func TestTryAcquire_goroutinesOfOneClientInALoopWin(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{})
	var clients []*redlock.Client
	for i := range 8 {
		clients = append(clients, newClient(t, cluster, adapters[i%2], fast()))
	}
	tryInALoop(t, clients, 32, 20, 10000)
}

// tryInALoop has goroutines goroutines of each client call TryAcquire on
// one key, and release what they won, until want calls won, which passes,
// or until the calls reached most first, or a minute passed, which fails:
// the clients livelock. It fails too when two calls hold the lock at once,
// or a call fails otherwise than with ErrNotAcquired.
func tryInALoop(t *testing.T, clients []*redlock.Client, goroutines, want, most int) {
	t.Helper()
	var calls, won, holders, callsAtWant atomic.Int64
	stop := make(chan struct{})
	var stopOnce sync.Once
	end := func() { stopOnce.Do(func() { close(stop) }) }
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range clients {
		for range goroutines {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					lock, err := c.TryAcquire(bg, "polled")
					n := calls.Add(1)
					if err != nil {
						if !errors.Is(err, redlock.ErrNotAcquired) {
							t.Errorf("TryAcquire: %v, want ErrNotAcquired", err)
							end()
						}
						if n >= int64(most) {
							end()
						}
						continue
					}
					if holders.Add(1) != 1 {
						t.Error("two calls hold the lock at once")
					}
					if won.Add(1) == int64(want) {
						callsAtWant.Store(n)
						end()
					}
					holders.Add(-1)
					lock.Release(bg)
				}
			})
		}
	}
	deadline := time.AfterFunc(time.Minute, end)
	wg.Wait()
	deadline.Stop()
	t.Logf("%d clients × %d goroutines: %d calls won of %d in %v", len(clients), goroutines, won.Load(), calls.Load(), time.Since(start).Round(time.Millisecond))
	switch at := callsAtWant.Load(); {
	case at == 0:
		t.Errorf("%d calls of %d won, want %d before %d calls or a minute", won.Load(), calls.Load(), want, most)
	case at > int64(most):
		t.Errorf("the %dth call to win was call %d, want one of the first %d", want, at, most)
	}
}

// A goroutine that calls TryAcquire on a key while another goroutine of
// its Client tries it makes no attempt of its own, which would split the
// nodes' votes with the other's: it waits for that attempt to end, and
// fails with what the nodes answered it.
func TestTryAcquire_sharesTheAttemptOfAnotherGoroutine(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], &redlock.Options{TTL: 10 * time.Second, NodeTimeout: time.Second})
	// Warm the connections so that pausing blocks replies, not dials.
	if l, err := client.TryAcquire(bg, "warm"); err != nil {
		t.Fatal(err)
	} else {
		l.Release(bg)
	}
	for _, n := range cluster.Nodes() {
		eventually(t, "the release of the warm-up lock on every node", func() bool { return keyOn(t, n, "warm") == "" })
	}
	held := cluster.Node(0)
	do(t, held, "SET", "shared", "someone-else", "PX", "60000")
	silent := cluster.Node(2)
	if err := silent.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Resume() })

	// The first attempt is refused on node 0, granted on node 1, and waits
	// for node 2 until the node timeout.
	before := scriptCallsOn(t, held)
	first := make(chan error, 1)
	go func() {
		_, err := client.TryAcquire(bg, "shared")
		first <- err
	}()
	eventually(t, "the first attempt refused on node 0 and granted on node 1", func() bool {
		return scriptCallsOn(t, held) == before+1 && keyOn(t, cluster.Node(1), "shared") != ""
	})
	before++
	_, err := client.TryAcquire(bg, "shared")
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire while another goroutine tries: %v, want ErrNotAcquired", err)
	}
	if calls := scriptCallsOn(t, held) - before; calls != 0 {
		t.Errorf("node 0 ran %d scripts while the second goroutine was in TryAcquire, want none: it made an attempt of its own", calls)
	}
	firstErr := <-first
	outcomes := func(err error) []redlock.Outcome {
		var o []redlock.Outcome
		for _, r := range quorumError(t, err).Nodes {
			o = append(o, r.Outcome)
		}
		return o
	}
	want := []redlock.Outcome{redlock.OutcomeHeld, redlock.OutcomeOK, redlock.OutcomeTimeout}
	if got := outcomes(firstErr); !slices.Equal(got, want) {
		t.Fatalf("first attempt: %v, want the nodes' answers %v", firstErr, want)
	}
	if got := outcomes(err); !slices.Equal(got, want) {
		t.Errorf("second call: %v, want the first attempt's answers %v", err, want)
	}
}

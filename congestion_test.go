package redlock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A waiter whose attempts a majority of nodes answers too late backs off,
// doubling its pause up to a second, whatever its retry strategy says, and
// is granted the lock once they answer in time again. Before, it tried
// again at the retry strategy's pace: a crowd of 64 waiters on nodes too
// busy to answer kept them too busy for anyone to be granted the lock for
// seconds (the torture row multikey/no-faults/crowd-64).
func TestAcquire_backsOffWhileAMajorityRepliesLate(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		attempts := &countingRetry{RetryStrategy: redlock.ExponentialJitter(time.Millisecond, 2*time.Millisecond)}
		opts := &redlock.Options{TTL: time.Second, NodeTimeout: 20 * time.Millisecond, MaxNodeTimeout: 20 * time.Millisecond,
			Retry: attempts}
		client := newClient(t, cluster, a, opts)
		warm(t, client)
		// Held by someone else on two nodes, so that no attempt is granted
		// while the nodes are busy.
		for _, i := range []int{0, 1} {
			do(t, cluster.Node(i), "SET", "congested", "someone else", "PX", "60000")
		}
		// Every node is busy: each runs one 250 ms command after another,
		// and answers the client's requests in the gaps, nearly all late.
		stop := overload(t, cluster.Nodes()...)

		type result struct {
			lock *redlock.Lock
			err  error
		}
		done := make(chan result, 1)
		before := attempts.retries()
		go func() {
			ctx, cancel := context.WithTimeout(bg, 15*time.Second)
			defer cancel()
			lock, err := client.Acquire(ctx, "congested")
			done <- result{lock, err}
		}()
		// The window the attempts are counted over, after which the
		// nodes answer in time again.
		const window = 3 * time.Second
		time.Sleep(window)
		// At the retry strategy's pace, every node timeout and a
		// millisecond or two, the call made about 130 attempts in the
		// window; doubling its pauses from the node timeout up to a
		// second, 11 to 17 (an attempt now and then that two nodes answer
		// in time starts the doubling over).
		if n := attempts.retries() - before + 1; n < 3 || n > 35 {
			t.Errorf("%d attempts in %s with the nodes replying late, want 3 to 35", n, window)
		}
		stop()
		for _, i := range []int{0, 1} {
			do(t, cluster.Node(i), "DEL", "congested")
		}
		// Answered in time again, the waiter is granted within its pauses
		// (at most a second each) and the TTL of the grants its late
		// attempts left on the busy nodes.
		r := <-done
		if r.err != nil {
			t.Fatalf("Acquire once every node answers in time again: %v", r.err)
		}
		if err := r.lock.Release(bg); err != nil {
			t.Fatal(err)
		}
	})
}

// countingRetry is a retry strategy that counts the retries it paced.
type countingRetry struct {
	redlock.RetryStrategy
	n atomic.Int64
}

func (r *countingRetry) NextDelay(attempt int) (time.Duration, bool) {
	r.n.Add(1)
	return r.RetryStrategy.NextDelay(attempt)
}

// retries returns how many retries it paced so far.
func (r *countingRetry) retries() int64 { return r.n.Load() }

// A waiter keeps its retry strategy's pace while only a minority of nodes
// does not answer: the backoff above is for nodes that cannot answer, not
// for a key that is held.
func TestAcquire_keepsItsPaceWhileAMinorityTimesOut(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		opts := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 20 * time.Millisecond, MaxNodeTimeout: 20 * time.Millisecond,
			Retry: redlock.ExponentialJitter(time.Millisecond, 2*time.Millisecond)}
		client := newClient(t, cluster, a, opts)
		warm(t, client)
		// Held on node 0 only, by someone else; node 1 grants it; node 2
		// does not answer: no attempt is decided before node 2's timeout
		// (or its error for a request still under way), one node of three.
		held := cluster.Node(0)
		do(t, held, "SET", "held", "someone else", "PX", "60000")
		if err := cluster.Node(2).Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cluster.Node(2).Resume() })

		// Each failed attempt's end, and how long its slowest node made
		// it wait: the pause before an attempt is the time from the end
		// of the one before to its own end, less its own wait.
		var ends []time.Time
		var waits []time.Duration
		notify := redlock.WithRetryNotify(func(err error) {
			var qe *redlock.QuorumError
			if !errors.As(err, &qe) {
				t.Errorf("attempt failed with %v, want a *QuorumError", err)
				return
			}
			wait := time.Duration(0)
			for _, r := range qe.Nodes {
				wait = max(wait, r.Latency)
			}
			ends, waits = append(ends, time.Now()), append(waits, wait)
		})
		ctx, cancel := context.WithTimeout(bg, 2*time.Second)
		defer cancel()
		if _, err := client.Acquire(ctx, "held", notify); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("Acquire of a key held on one node of three, another paused: %v", err)
		}
		// At the retry strategy's pace, 1 to 2 ms; the backoff would have
		// doubled them from 10 to 20 ms up to half a second or more: the
		// median of the first six would have been 40 ms or more. Each
		// pause also holds what a loaded machine adds to the wake-ups.
		var pauses []time.Duration
		for i := 1; i < len(ends); i++ {
			pauses = append(pauses, ends[i].Sub(ends[i-1])-waits[i])
		}
		if len(pauses) < 6 {
			t.Fatalf("%d attempts in 2s with one node of three silent, want 7 or more", len(ends))
		}
		slices.Sort(pauses)
		if median := pauses[len(pauses)/2]; median > 20*time.Millisecond {
			t.Errorf("median pause %v between %d attempts with one node of three silent, want 20ms at most: %v",
				median, len(ends), pauses)
		}
	})
}

// warm makes one acquisition on every node of client, so that the
// connections are up: pausing a node then blocks its replies, not a dial.
func warm(t *testing.T, client *redlock.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	l, err := client.Acquire(ctx, "warm")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
}

// overload keeps each of nodes busy, one 250 ms command after another,
// until the returned function is called, which waits for the last ones to
// end.
func overload(t *testing.T, nodes ...*redlocktest.Node) (stop func()) {
	t.Helper()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-quit:
					return
				default:
				}
				if _, err := n.Do(bg, "DEBUG", "SLEEP", "0.25"); err != nil {
					t.Errorf("node %d: DEBUG SLEEP: %v", n.Index(), err)
					return
				}
			}
		}()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// WithRetryNotify tells a waiting Acquire's and AcquireAll's caller why
// each failed attempt failed, each node's answer, while the call keeps
// waiting: here, the key held by another client.
func TestWithRetryNotify_tellsEachFailedAttempt(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], nil)
	waiter := newClient(t, cluster, adapters[1%len(adapters)], nil)
	for _, all := range []bool{false, true} {
		held, err := holder.Acquire(bg, "told")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var told []error
		notify := redlock.WithRetryNotify(func(err error) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, err)
		})
		got := make(chan error, 1)
		go func() {
			if all {
				locks, err := waiter.AcquireAll(bg, []string{"other", "told"}, notify)
				if err == nil {
					err = locks.Release(bg)
				}
				got <- err
				return
			}
			lock, err := waiter.Acquire(bg, "told", notify)
			if err == nil {
				err = lock.Release(bg)
			}
			got <- err
		}()
		eventually(t, "a failed attempt is told", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(told) > 0
		})
		if err := held.Release(bg); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("AcquireAll %v: %v", all, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("AcquireAll %v: not acquired within 10 s of the release", all)
		}
		// Each told error is an attempt's, with each node's answer; on a
		// busy host an attempt may also time out: at least one says the
		// key was held.
		mu.Lock()
		sawHeld := 0
		for _, err := range told {
			qe := quorumError(t, err)
			if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Errorf("AcquireAll %v: told %v, want ErrNotAcquired", all, err)
			}
			if qe.Key == "told" && countOutcomes(qe)[redlock.OutcomeHeld] > 0 {
				sawHeld++
			}
		}
		if sawHeld == 0 {
			t.Errorf("AcquireAll %v: none of %d told errors says the key was held: %v", all, len(told), told)
		}
		mu.Unlock()
	}
}

// A TryAcquire makes one attempt, and tells nothing.
func TestWithRetryNotify_notCalledByTryAcquire(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], nil)
	if _, err := c.Acquire(bg, "once"); err != nil {
		t.Fatal(err)
	}
	called := false
	if _, err := c.TryAcquire(bg, "once", redlock.WithRetryNotify(func(error) { called = true })); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire of a held key: %v", err)
	}
	if called {
		t.Error("TryAcquire called the retry notification")
	}
}

// noPause is a RetryStrategy that never pauses.
type noPause struct{}

func (noPause) NextDelay(int) (time.Duration, bool) { return 0, true }

// A RetryStrategy that gives no pause does not send the nodes attempts as
// fast as they answer: a waiter pauses at least a millisecond between two
// attempts, whether it waits first in line or behind others.
func TestRetry_aPauseOfNothingIsAMillisecond(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	holder := newClient(t, cluster, adapters[0], nil)
	waiter := newClient(t, cluster, adapters[0], &redlock.Options{Retry: noPause{}})
	held, err := holder.Acquire(bg, "unpaced")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)
	var attempts int
	notify := redlock.WithRetryNotify(func(error) { attempts++ })
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	if _, err := waiter.Acquire(ctx, "unpaced", notify); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Acquire of a held key: %v, want ErrNotAcquired", err)
	}
	// Each told attempt but the last was followed by a pause of at least
	// a millisecond before the next.
	if most := int(time.Since(began)/time.Millisecond) + 1; attempts > most {
		t.Errorf("%d attempts in %v: more than one a millisecond", attempts, time.Since(began))
	}
	if attempts < 2 {
		t.Errorf("%d attempts in %v: the waiter did not try again", attempts, time.Since(began))
	}
}

// An error names a node whose answer the call did not wait for as such.
func TestQuorumError_namesANodeNotWaitedFor(t *testing.T) {
	err := &redlock.QuorumError{Op: "acquire", Key: "k", OK: 1, Quorum: 2, Err: redlock.ErrNotAcquired, Nodes: []redlock.NodeResult{
		{Node: "a:1", Outcome: redlock.OutcomeOK}, {Node: "b:1", Outcome: redlock.OutcomeHeld}, {Node: "c:1", Outcome: redlock.OutcomeNoAnswer}}}
	if msg := err.Error(); !strings.HasSuffix(msg, "c:1 not waited for") {
		t.Errorf("%s: want it to end with c:1 not waited for", msg)
	}
}

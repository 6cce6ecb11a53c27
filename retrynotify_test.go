package redlock_test

import (
	"errors"
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

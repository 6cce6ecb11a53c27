package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestAcquire_wokenByRelease(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, lasting())
		// The waiter's retry delay is far longer than the test's deadline:
		// only the release announcement can get it the lock in time.
		waiter := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 300 * time.Millisecond,
			Retry: redlock.Jittered(time.Minute, time.Minute)})
		for round := range 3 {
			lock, err := holder.TryAcquire(bg, "wake")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, 5*time.Second)
			acquired := make(chan error, 1)
			var got *redlock.Lock
			go func() {
				var err error
				got, err = waiter.Acquire(ctx, "wake")
				acquired <- err
			}()
			// The waiter failed once, and listens.
			eventually(t, "the waiter listening", func() bool { return waiter.Listening("wake") == 1 })
			lock.Release(bg)
			err = <-acquired
			cancel()
			if err != nil {
				t.Fatalf("round %d: waiter not woken by the release: %v", round, err)
			}
			got.Release(bg)
		}
	})
}

func TestAcquire_wakeOneWaiterAtATime(t *testing.T) {
	// Many waiters in one client take turns through wake-ups alone.
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	client := newClient(t, cluster, adapters[1], &redlock.Options{NodeTimeout: 300 * time.Millisecond,
		Retry: redlock.Jittered(time.Minute, time.Minute)})
	first, err := client.TryAcquire(bg, "queue")
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 6
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lock, err := client.Acquire(ctx, "queue")
			if err != nil {
				errs <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
			errs <- lock.Release(bg)
		}()
	}
	// Let every waiter fail once and queue, and the subscriptions start: an
	// announcement made before then is missed (waiters fall back to polling).
	time.Sleep(time.Second)
	first.Release(bg)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
	}
}

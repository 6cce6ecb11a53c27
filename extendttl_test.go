package redlock_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Extend to a TTL shorter than the acquisition's keeps the lock until the
// loss margin of that TTL: the margin of the acquisition TTL, a second of
// ten, ended a lock extended for one second as soon as it was extended.
func TestExtend_shorterTTLTakesItsOwnLossMargin(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], &redlock.Options{NodeTimeout: 200 * time.Millisecond})
	lock, err := client.TryAcquire(bg, "shortened", redlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Extend(bg, time.Second); err != nil {
		t.Fatal(err)
	}
	// Held until about 100 ms (the margin of 1 s) before its deadline.
	select {
	case <-lock.Done():
		t.Fatalf("ended %v before its deadline, extended for 1 s: %v", time.Until(lock.Until()), lock.Err())
	case <-time.After(time.Until(lock.Until()) - 300*time.Millisecond):
	}
	select {
	case <-lock.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not ended 5 s after its deadline")
	}
	if !errors.Is(lock.Err(), redlock.ErrLockLost) {
		t.Errorf("Err() = %v, want ErrLockLost: it was extended", lock.Err())
	}
}

// A renewed lock extended for a shorter TTL is renewed for that TTL, every
// third of it: extended for less than a third of its acquisition TTL, it
// was lost before its first renewal.
func TestExtend_renewalKeepsAShorterTTL(t *testing.T) {
	const ttl = 1500 * time.Millisecond
	cluster, lock := renewedAndExtended(t, "shortened", 6*time.Second, ttl, 2)
	if left := time.Until(lock.Until()); left > ttl {
		t.Errorf("validity left %v after two renewals, want at most %v", left, ttl)
	}
	if n := nodesWithPTTL(t, cluster, "shortened", 1, ttl); n < 2 {
		t.Errorf("%d nodes hold the key for at most %v, want a majority", n, ttl)
	}
}

// A renewed lock extended for a longer TTL is renewed for that TTL, a
// third of it later: its next renewal cut it back to the acquisition TTL, a
// third of that after it was granted.
func TestExtend_renewalKeepsALongerTTL(t *testing.T) {
	const ttl = 20 * time.Second
	cluster, lock := renewedAndExtended(t, "lengthened", time.Second, ttl, 1)
	if left := time.Until(lock.Until()); left < ttl-3*time.Second {
		t.Errorf("validity left %v after the renewal that followed an extension for %v", left, ttl)
	}
	if n := nodesWithPTTL(t, cluster, "lengthened", ttl-3*time.Second, ttl); n < 2 {
		t.Errorf("%d nodes hold the key for %v to %v, want a majority", n, ttl-3*time.Second, ttl)
	}
}

// renewedAndExtended takes key on three nodes for acquired with
// WithAutoRenew, extends it for extended, and returns once that many
// renewals followed with the lock still held; the lock is released as the
// test ends.
func renewedAndExtended(t *testing.T, key string, acquired, extended time.Duration, renewals int) (*redlocktest.Cluster, *redlock.Lock) {
	t.Helper()
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], &redlock.Options{NodeTimeout: 200 * time.Millisecond})
	lock, err := client.TryAcquire(bg, key, redlock.WithTTL(acquired), redlock.WithAutoRenew())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Release(bg) })
	if err := lock.Extend(bg, extended); err != nil {
		t.Fatal(err)
	}
	extensions := lock.Extensions()
	eventually(t, "the renewals after the extension", func() bool {
		if err := lock.Err(); err != nil {
			t.Fatalf("lost: %v", err)
		}
		return lock.Extensions() >= extensions+renewals
	})
	return cluster, lock
}

// nodesWithPTTL returns how many nodes hold key with a PTTL from least to
// most.
func nodesWithPTTL(t *testing.T, cluster *redlocktest.Cluster, key string, least, most time.Duration) int {
	t.Helper()
	n := 0
	for _, node := range cluster.Nodes() {
		ms, _ := strconv.Atoi(do(t, node, "PTTL", key))
		if d := time.Duration(ms) * time.Millisecond; d >= least && d <= most {
			n++
		}
	}
	return n
}

// Extensions of one lock with different TTLs, made at once (Extend beside
// a renewal, say), leave the deadline of the one the nodes ran last: the
// lock believed itself held for 5 s while a majority of the nodes kept it
// for 700 ms, in a third to a half of the tries, before they took turns.
func TestExtend_concurrentExtensionsLeaveADeadlineTheNodesKeep(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	forEachAdapter(t, func(t *testing.T, a adapter) {
		client := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 500 * time.Millisecond})
		for range 40 {
			lock, err := client.TryAcquire(bg, "extended-at-once", redlock.WithTTL(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, ttl := range []time.Duration{700 * time.Millisecond, 5 * time.Second} {
				wg.Go(func() { lock.Extend(bg, ttl) })
			}
			wg.Wait()
			// A majority keeps the key for at least the validity left.
			until := lock.Until()
			for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
				if nodesWithPTTL(t, cluster, "extended-at-once", time.Until(until), time.Hour) >= 2 {
					break
				}
				if time.Now().After(deadline) {
					left := time.Until(until)
					t.Fatalf("the lock believes itself valid for %v; fewer than 2 nodes keep it as long", left)
				}
			}
			if err := lock.Release(bg); err != nil {
				t.Fatal(err)
			}
		}
	})
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Do's release reads the lock's deadline while its renewal may still be
// moving it: with short TTLs the two meet often, and the race detector
// (the suite runs with -race) sees any access outside the lock's mutex.
func TestDo_releaseWhileRenewingIsRaceFree(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				hold := time.Duration((g*25+i)%20) * time.Millisecond
				err := c.Do(bg, fmt.Sprintf("renewed-%d-%d", g, i), func(context.Context) error {
					time.Sleep(hold) // the work the lock protects: renewals run meanwhile
					return nil
				}, redlock.WithTTL(15*time.Millisecond))
				// With a 15 ms TTL, a busy host loses a lock, or times out
				// its release (the node timeout stays within the TTL):
				// what this test judges is the race detector's verdict.
				if err != nil && !errors.Is(err, redlock.ErrLockLost) && !errors.Is(err, redlock.ErrNotReleased) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// An Extend that runs while the lock is released finds the keys the
// release deleted: the lock was released, not lost. Before, it was marked
// lost (Err ErrLockLost, counted and logged as a loss) now and then, seen
// on a semaphore's permit.
func TestExtend_duringReleaseIsNoLoss(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], fast())
	shapes := [][]redlock.LockOption{nil, {redlock.WithShared()}, {redlock.WithLimit(2)}}
	for i := range 300 {
		lock := take(t, c, "raced", shapes[i%len(shapes)]...)
		var wg sync.WaitGroup
		for g := range 8 {
			if g%2 == 0 {
				wg.Go(func() { lock.Release(bg) })
			} else {
				wg.Go(func() { lock.Extend(bg, 0) })
			}
		}
		wg.Wait()
		if err := lock.Err(); !errors.Is(err, redlock.ErrReleased) {
			t.Fatalf("round %d: Err after a release raced by extensions: %v, want ErrReleased", i, err)
		}
	}
}

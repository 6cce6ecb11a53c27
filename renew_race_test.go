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

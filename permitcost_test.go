package redlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A goroutine woken by the release of a permit that its client held, which
// takes that permit, asked the nodes for no other: it sends no request to
// leave the other permits' queues, where it never was. Goroutines of one
// client taking turns on a semaphore then cost a node about one script
// call to acquire a permit and one to release it, not one more for each
// other permit. Each request reads its key with one MGET, whether it
// leaves in a script call of its own or in a batch.
func TestPermits_grantLeavesOnlyTheQueuesItEntered(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		node := cluster.Node(0)
		c := newClient(t, cluster, a, fast())
		do(t, node, "CONFIG", "RESETSTAT")
		const goroutines, rounds, limit = 8, 25, 4
		takeTurns(t, c, "pool", goroutines, rounds, 0, redlock.WithLimit(limit))
		stats := commandStats(t, node)
		grants := goroutines * rounds
		requests := stats["mget"]
		// Each grant costs an acquisition and a release, and now and then
		// a refused try and the leaving of its queue; leaving the other
		// three permits' queues at every grant would cost three more.
		if most := int64(3 * grants); requests > most {
			t.Errorf("%d requests (MGET) for %d grants of %d permits, want at most %d", requests, grants, limit, most)
		}
	})
}

// takeTurns has goroutines of c acquire name, hold it for hold and release
// it, rounds times each, with opts, and returns once they are all done.
func takeTurns(t *testing.T, c *redlock.Client, name string, goroutines, rounds int, hold time.Duration, opts ...redlock.LockOption) {
	t.Helper()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range rounds {
				l, err := c.Acquire(bg, name, opts...)
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(hold)
				if err := l.Release(bg); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

// The release of a permit that another goroutine of its client waits for
// carries that goroutine's attempt, in the same script call on each node,
// as a mutex's release does: goroutines of one client taking turns on a
// semaphore cost a node about one script call per grant, not an
// acquisition and a release.
func TestPermits_releaseCarriesTheNextGoroutinesAttempt(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		for _, n := range cluster.Nodes() {
			do(t, n, "CONFIG", "RESETSTAT")
		}
		// Each holds its permit for a while, so that the one whose turn it
		// is to wait finds every permit held here.
		const goroutines, rounds, limit = 8, 15, 2
		takeTurns(t, c, "pool", goroutines, rounds, 2*time.Millisecond, redlock.WithLimit(limit))
		grants := goroutines * rounds
		for _, n := range cluster.Nodes() {
			stats := commandStats(t, n)
			calls := stats["evalsha"] + stats["eval"] + stats["fcall"]
			t.Logf("node %d: %d script calls for %d grants", n.Index(), calls, grants)
			// Without carried attempts every grant costs an acquisition
			// and a release: two calls.
			if most := int64(grants * 7 / 4); calls > most {
				t.Errorf("node %d: %d script calls for %d grants of %d permits, want at most %d", n.Index(), calls, grants, limit, most)
			}
		}
	})
}

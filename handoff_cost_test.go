package redlock_test

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// Goroutines of one client that hand a lock to each other, with no other
// client waiting, do not enter the key's queue on the nodes: the attempt a
// release carries takes the key at once where the first live client in
// line is its own, or nobody is, and only another client first in line
// makes it queue and defer (TestHandoff_anotherClientQueuedFirstGoesFirst).
func TestHandoff_withinOneClientLeavesTheQueueAlone(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		for _, n := range cluster.Nodes() {
			do(t, n, "CONFIG", "RESETSTAT")
		}
		const goroutines, rounds = 8, 40
		takeTurns(t, c, "passed-around", goroutines, rounds, 0)
		grants := int64(goroutines * rounds)
		for _, n := range cluster.Nodes() {
			// A goroutine whose turn comes before any release carries its
			// attempt is refused and queues once; entering the queue at
			// every handoff would cost a ZADD per grant.
			if zadds := commandStats(t, n)["zadd"]; zadds > grants/4 {
				t.Errorf("node %d: %d ZADD for %d grants within one client, want at most %d", n.Index(), zadds, grants, grants/4)
			}
		}
	})
}

// Goroutines of one client that hold a lock for longer than the first
// retry pause still hand it to each other: the goroutine whose turn
// started while the lock is held here waits for that lock's release
// (while it is valid), which carries its attempt, instead of trying, being
// refused, and trying again after the release, two script calls more per
// grant. Before, every hold longer than the default strategy's first pause
// (up to 10 ms) withdrew the offer, and no release carried an attempt.
func TestHandoff_holdsLongerThanTheFirstRetryPause(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		o, opts := observe(t)
		// A node timeout a loaded machine does not reach: a carried
		// attempt that timed out would be tried again, and counted apart.
		opts.TTL, opts.NodeTimeout = 5*time.Second, time.Second
		c := newClient(t, cluster, a, opts)
		for _, n := range cluster.Nodes() {
			do(t, n, "CONFIG", "RESETSTAT")
		}
		const goroutines, rounds = 4, 5
		takeTurns(t, c, "held-a-while", goroutines, rounds, 30*time.Millisecond)
		grants := goroutines * rounds
		// Each release but the last ones of the goroutines hands the lock on.
		if n := o.sum(t, "redlock.handoffs", attrs{"redlock.outcome": "acquired"}); n < int64(grants-goroutines) {
			t.Errorf("%d of %d grants handed over, want at least %d", n, grants, grants-goroutines)
		}
		for _, n := range cluster.Nodes() {
			calls := scriptCallsOn(t, n)
			t.Logf("node %d: %d script calls for %d grants", n.Index(), calls, grants)
			if most := grants * 5 / 4; calls > most {
				t.Errorf("node %d: %d script calls for %d grants, want at most %d", n.Index(), calls, grants, most)
			}
		}
	})
}

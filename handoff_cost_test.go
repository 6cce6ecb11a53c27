package redlock_test

import (
	"testing"

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

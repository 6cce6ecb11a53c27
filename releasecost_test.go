package redlock_test

import (
	"strconv"
	"testing"

	"github.com/redlock-go/redlock/redlocktest"
)

// A release that nobody waits for (no client queued for the key, no
// subscriber on its channel) neither reads the key's queue nor publishes:
// an acquisition reads the key's waiting mark with the restart marker and
// the fencing counter, and a release with the lock key, one MGET each, and
// nothing else is read: no EXISTS, ZRANGE, ZSCORE, PUBSUB or PUBLISH.
func TestRelease_nobodyWaitingReadsNoQueueAndPublishesNothing(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		node := cluster.Node(0)
		c := newClient(t, cluster, a, fast())
		do(t, node, "CONFIG", "RESETSTAT")
		const cycles = 10
		for i := range cycles {
			name := "alone-" + strconv.Itoa(i)
			lock, err := c.Acquire(bg, name)
			if err != nil {
				t.Fatal(err)
			}
			if err := lock.Release(bg); err != nil {
				t.Fatal(err)
			}
			// The release may still be under way on the node.
			eventually(t, "the release ran", func() bool { return keyOn(t, node, name) == "" })
		}
		stats := commandStats(t, node)
		for _, cmd := range []string{"publish", "zrange", "zscore", "zrangebyscore", "hmget", "exists", "pubsub|numsub"} {
			if n := stats[cmd]; n != 0 {
				t.Errorf("%d %s calls in %d cycles with nobody waiting, want none", n, cmd, cycles)
			}
		}
		if n := stats["mget"]; n != 2*cycles {
			t.Errorf("%d MGET in %d cycles, want %d: one per acquisition and one per release", n, cycles, 2*cycles)
		}
	})
}

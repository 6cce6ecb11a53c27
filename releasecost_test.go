package redlock_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
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

// A failed attempt is not released on a node that had not answered it in
// time and then refused it: on a crowded key most nodes of a failed
// attempt answer so, and each such release cost the node a script call.
// Node 0 is silent while the attempt fails on the two others, which the
// holder's lock keeps; once it answers, it refuses the attempt too, and
// runs that one script call only.
func TestRelease_failedAttemptSkipsANodeThatRefusedLate(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		slow := cluster.Node(0)
		opts := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 100 * time.Millisecond}
		holder := newClient(t, cluster, a, opts)
		lock, err := holder.Acquire(bg, "refused-late")
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release(bg)
		waitForKey(t, cluster, "refused-late", lock.Token())
		// The node's late answer counts only while the request still
		// waits for it (lateReplyWait, 500 ms past the 100 ms node
		// timeout): a machine too busy to resume the node in time tries
		// again.
		for try := 1; ; try++ {
			calls, inTime := attemptWhileSilent(t, cluster, a, opts, slow)
			if inTime {
				if calls != 1 {
					t.Errorf("%d script calls on the node that refused the attempt late, want 1 (the attempt's): its release was sent", calls)
				}
				return
			}
			if try == 5 {
				t.Fatal("the node was never resumed within 300 ms of the attempt")
			}
		}
	})
}

// attemptWhileSilent makes a new client try for the key "refused-late"
// while node slow is paused, resumes it, and returns the script calls the
// node ran for that client once it closed, and whether the node was
// resumed within 300 ms of the attempt.
func attemptWhileSilent(t *testing.T, cluster *redlocktest.Cluster, a adapter, opts *redlock.Options, slow *redlocktest.Node) (calls int, inTime bool) {
	c := newClient(t, cluster, a, opts)
	warm, err := c.Acquire(bg, "warm-up") // the connections are open
	if err != nil {
		t.Fatal(err)
	}
	warm.Release(bg)
	// Acquire and Release return at a quorum: the slow node may run both
	// later. The counter is there once it ran the acquisition, and the
	// release follows it there.
	eventually(t, "the warm-up acquired and released on the slow node", func() bool {
		return keyOn(t, slow, redlock.FenceKey("warm-up")) != "" && keyOn(t, slow, "warm-up") == ""
	})
	before := scriptCallsOn(t, slow)

	if err := slow.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.TryAcquire(bg, "refused-late")
	if !errors.Is(err, redlock.ErrNotAcquired) {
		slow.Resume()
		t.Fatalf("TryAcquire of a held key: %v, want ErrNotAcquired", err)
	}
	if err := slow.Resume(); err != nil {
		t.Fatal(err)
	}
	inTime = time.Since(start) < 300*time.Millisecond
	eventually(t, "the silent node answered the attempt", func() bool { return scriptCallsOn(t, slow) > before })
	c.Close() // it waits for the requests under way, the release's included
	return scriptCallsOn(t, slow) - before, inTime
}

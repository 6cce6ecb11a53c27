package redlock_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Distinct lock names, acquired and released, and failed attempts, leave
// nothing on the nodes once the TTL plus the recovery delay has passed: the
// fencing counters expire then, the queues of waiting clients sooner.
func TestResidue_distinctNamesLeaveNothingBehind(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	// A recovery delay that outlasts the loop below, even under the race
	// detector on a busy machine, so that the first names' counters are
	// still there when it ends; a TTL that outlasts a stall of the
	// machine between an Acquire and its Release.
	opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, RecoveryDelay: 4 * time.Second}
	c := newClient(t, cluster, adapters[0], opts)
	baseline := dbsize(t, cluster)
	const names = 2000
	for i := range names {
		lock, err := c.Acquire(bg, "order:"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			// A failed attempt on a held name leaves its counter too.
			if _, err := c.TryAcquire(bg, "order:"+strconv.Itoa(i)); err == nil {
				t.Fatal("a held lock was granted twice")
			}
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
	if grown := dbsize(t, cluster) - baseline; grown < names {
		t.Fatalf("%d keys more than before on the nodes right after %d names, want their counters", grown, names)
	}
	deadline := time.Now().Add(opts.TTL + opts.RecoveryDelay + 5*time.Second)
	for dbsize(t, cluster) > baseline {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys on the nodes %v after the last release, %d before: counters outlive TTL + RecoveryDelay",
				dbsize(t, cluster), opts.TTL+opts.RecoveryDelay+5*time.Second, baseline)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dbsize returns the number of keys on all the nodes of cluster.
func dbsize(t *testing.T, cluster *redlocktest.Cluster) int {
	t.Helper()
	total := 0
	for _, n := range cluster.Nodes() {
		v, err := strconv.Atoi(do(t, n, "DBSIZE"))
		if err != nil {
			t.Fatal(err)
		}
		total += v
	}
	return total
}

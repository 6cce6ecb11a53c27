package redlock_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// oomClient returns three nodes and a client of them over a, its scripts
// run by EVALSHA when disable is true, whose locks last longer than
// waitGone waits: a key gone was released, not expired.
func oomClient(t *testing.T, a adapter, disable bool) (*redlocktest.Cluster, *redlock.Client) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	opts := fast()
	opts.DisableFunctions = disable
	opts.TTL = 30 * time.Second
	return cluster, newClient(t, cluster, a, opts)
}

// A node out of memory (maxmemory with noeviction, the policy SAFETY.md
// asks for) refuses new locks, and still takes releases and extensions,
// as it takes DEL and PEXPIRE: with the scripts as functions (the
// default) as with EVALSHA, and for requests sent alone or batched.
func TestOOM_releaseAndExtendRunOnANodeOutOfMemory(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		for _, disable := range []bool{false, true} {
			if !disable && !installedHas(t, redlocktest.Functions) {
				continue // by EVALSHA, a batch's acquisitions are judged as SAFETY.md says (A2)
			}
			cluster, c := oomClient(t, a, disable)
			const n = 8
			locks := make([]*redlock.Lock, n)
			for i := range locks {
				var err error
				if locks[i], err = c.TryAcquire(bg, "oom-"+string(rune('a'+i))); err != nil {
					t.Fatal(err)
				}
				// Every node holds it before running out of memory: the
				// releases below run on each node out of memory.
				waitForKey(t, cluster, locks[i].Key(), locks[i].Token())
			}
			for _, node := range cluster.Nodes() {
				do(t, node, "CONFIG", "SET", "maxmemory-policy", "noeviction")
				do(t, node, "CONFIG", "SET", "maxmemory", "1")
			}
			if _, err := c.TryAcquire(bg, "oom-new"); err == nil {
				t.Errorf("functions off %v: a new lock was granted on nodes out of memory", disable)
			}
			if err := locks[0].Extend(bg, 0); err != nil {
				t.Errorf("functions off %v: extend on nodes out of memory: %v", disable, err)
			}
			// At once, so that the requests of several calls share one
			// script call to a node, with acquisitions among them, which
			// the nodes refuse as functions. By EVALSHA, Redis judges a
			// script out of memory only until its first write: a batch
			// whose release came first may grant too, and one refused
			// after its releases ran has them sent again, which find
			// their keys gone (ErrNotHeld): the keys are gone either way.
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i, l := range locks {
				wg.Go(func() { errs[i] = l.Release(bg) })
				wg.Go(func() {
					if _, err := c.TryAcquire(bg, "oom-new-"+string(rune('a'+i))); err == nil && !disable {
						t.Errorf("functions off %v: a new lock was granted on nodes out of memory", disable)
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil && !(disable && errors.Is(err, redlock.ErrNotHeld)) {
					t.Errorf("functions off %v: release %d on nodes out of memory: %v", disable, i, err)
				}
			}
			// A release returns once a quorum answered: the last node
			// follows.
			for _, node := range cluster.Nodes() {
				for _, l := range locks {
					waitGone(t, node, l.Key(), fmt.Sprintf("functions off %v: %s still on %s after its release", disable, l.Key(), node.Addr()))
				}
			}
			for _, node := range cluster.Nodes() {
				do(t, node, "CONFIG", "SET", "maxmemory", "0")
			}
		}
	})
}

// On nodes out of memory, what only reads answers as before: Check finds
// the holder current, Inspect shows it, and List lists it. Before, the
// reading functions were refused as writes (their function had no flag),
// Check said "not checked", and List listed nothing and said it was
// complete.
func TestOOM_readsRunOnANodeOutOfMemory(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		for _, disable := range []bool{false, true} {
			cluster, c := oomClient(t, a, disable)
			lock := take(t, c, "oom-read")
			waitForKey(t, cluster, lock.Key(), lock.Token())
			for _, node := range cluster.Nodes() {
				do(t, node, "CONFIG", "SET", "maxmemory-policy", "noeviction")
				do(t, node, "CONFIG", "SET", "maxmemory", "1")
			}
			if r, err := c.Check(bg, "oom-read", lock.Token()); err != nil || !r.Current || r.Answered != 3 {
				t.Errorf("functions off %v: Check on nodes out of memory: %+v %v, want current on 3 nodes", disable, r, err)
			}
			states, err := c.Inspect(bg, "oom-read")
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range states {
				if st.Err != nil || st.Holder != lock.Token() {
					t.Errorf("functions off %v: Inspect of %s on a node out of memory: %+v", disable, st.Node, st)
				}
			}
			held, err := c.List(bg, "oom-")
			if err != nil || len(held) != 1 || held[0].Key != "oom-read" {
				t.Errorf("functions off %v: List on nodes out of memory: %+v %v, want the lock", disable, held, err)
			}
			for _, node := range cluster.Nodes() {
				do(t, node, "CONFIG", "SET", "maxmemory", "0")
			}
			if err := lock.Release(bg); err != nil {
				t.Fatal(err)
			}
		}
	})
}

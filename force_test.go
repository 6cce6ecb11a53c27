package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// ForceRelease frees a held lock in one step: the waiter is woken at once,
// the holder learns at its next renewal that an operator took it over
// (ErrTakenOver, its log record says so), and the record of who forced it
// expires no later than the lock would have.
func TestForceRelease_holderTakenOverWaiterWoken(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		logs := &capturedLogs{}
		holderOpts := &redlock.Options{TTL: 3 * time.Second, NodeTimeout: 300 * time.Millisecond, Owner: "batch-7", Logger: slog.New(logs)}
		holder := newClient(t, cluster, a, holderOpts)
		waiter := newClient(t, cluster, a, &redlock.Options{TTL: 3 * time.Second, NodeTimeout: 300 * time.Millisecond,
			Retry: redlock.ExponentialJitter(time.Minute, time.Minute)})
		admin := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 300 * time.Millisecond})
		lock, err := holder.TryAcquire(bg, "stuck", redlock.WithAutoRenew())
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release(bg)
		next := acquireLater(waiter, "stuck")
		awaitWaiter(t, cluster, admin, "stuck")

		grants, err := admin.ForceRelease(bg, "stuck", "ops:alice")
		// The waiter's refused attempt may still stand on a node it won
		// until its clean-up reaches it: only the holder's grant is sure.
		if err != nil || !slices.ContainsFunc(grants, func(g redlock.Grant) bool { return g.Token == lock.Token() && g.Owner == "batch-7" }) {
			t.Fatalf("ForceRelease = %+v, %v; want the holder's grant", grants, err)
		}
		// ForceRelease returns at a quorum: a node may take the record a
		// little later, and one whose request timed out may never.
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		pollNodes(t, ctx, cluster, admin.Quorum(), "the forced record written", func(n *redlocktest.Node) bool {
			return keyOn(t, n, "redlock:forced:stuck") != ""
		})
		for _, n := range cluster.Nodes() {
			record := keyOn(t, n, "redlock:forced:stuck")
			if record == "" {
				continue
			}
			ms, _ := strconv.Atoi(do(t, n, "PTTL", "redlock:forced:stuck"))
			// A node that the waiter's refused attempt held records its
			// grant, which ForceRelease returned too.
			forced := slices.ContainsFunc(grants, func(g redlock.Grant) bool { return strings.HasSuffix(record, " "+g.Token) })
			if !strings.HasPrefix(record, "ops:alice ") || !forced || ms <= 0 || ms > 3000 {
				t.Errorf("node %d: forced record %q expiring in %d ms", n.Index(), record, ms)
			}
		}
		wantWoken(t, next, "the waiter, by the forced release")
		select {
		case <-lock.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the holder never learnt it lost the lock")
		}
		if err := lock.Err(); !errors.Is(err, redlock.ErrTakenOver) || !errors.Is(err, redlock.ErrLockLost) || !strings.Contains(err.Error(), "ops:alice") {
			t.Errorf("holder's Err() = %v, want ErrTakenOver (and ErrLockLost) naming ops:alice", err)
		}
		eventually(t, "the lost lock's log record", func() bool {
			return logs.count(slog.LevelWarn, "redlock: lock lost", attrs{"reason": "forced_by_operator"}) == 1
		})
	})
}

// awaitWaiter waits until a quorum of nodes queue a client waiting for
// key, and list a subscriber of a release channel of key: a node whose
// answer to the waiter's attempt came too late may not queue it.
func awaitWaiter(t *testing.T, cluster *redlocktest.Cluster, c *redlock.Client, key string) {
	t.Helper()
	eventually(t, "a waiter queued and listening on a quorum of nodes", func() bool {
		states, err := c.Inspect(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for i, st := range states {
			if st.Waiting >= 1 && do(t, cluster.Node(i), "PUBSUB", "CHANNELS", "redlock:released:"+key+"*") != "" {
				ready++
			}
		}
		return ready >= len(states)/2+1
	})
}

// ForceRelease frees every reader of a lock held shared, refuses what is
// not a lock, says when nothing was held, and checks who forces it.
func TestForceRelease_readersAndRefusals(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 300 * time.Millisecond})
		for _, owner := range []string{"r1", "r2"} {
			if _, err := c.TryAcquire(bg, "doc", redlock.WithShared(), redlock.WithOwner(owner)); err != nil {
				t.Fatal(err)
			}
		}
		// TryAcquire returns at a quorum: a reader's request may still be
		// on its way to the third node, and would land after the forced
		// release there.
		eventually(t, "both readers on every node", func() bool {
			for _, n := range cluster.Nodes() {
				if v, err := n.Do(bg, "ZCARD", "doc"); err != nil || v != "2" {
					return false
				}
			}
			return true
		})
		grants, err := c.ForceRelease(bg, "doc", "ops")
		if err != nil || len(grants) != 2 {
			t.Fatalf("ForceRelease of 2 readers = %+v, %v", grants, err)
		}
		if _, err := c.TryAcquire(bg, "doc"); err != nil {
			t.Errorf("a writer after the readers were forced out: %v", err)
		}
		if _, err := c.ForceRelease(bg, "free", "ops"); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("ForceRelease of a free key: %v, want ErrNotHeld", err)
		}
		for _, n := range cluster.Nodes() {
			do(t, n, "SET", "data", "not a lock")
		}
		if _, err := c.ForceRelease(bg, "data", "ops"); err == nil || keyOn(t, cluster.Node(0), "data") != "not a lock" {
			t.Errorf("ForceRelease of a key without expiry: %v; the key is %q", err, keyOn(t, cluster.Node(0), "data"))
		}
		if _, err := c.ForceRelease(bg, "doc", "two words"); !errors.Is(err, redlock.ErrInvalidOwner) {
			t.Errorf("ForceRelease by %q: %v, want ErrInvalidOwner", "two words", err)
		}
		if _, err := c.ForceRelease(context.Background(), "redlock:forced:doc", "ops"); !errors.Is(err, redlock.ErrInvalidKey) {
			t.Errorf("ForceRelease of the forced record: %v, want ErrInvalidKey", err)
		}
	})
}

// ForceRelease and List return when their context ends, even with nodes
// that do not answer and a Conn that does not end its requests at the
// context's deadline (goredis): not at the operator's timeout of 3 s.
func TestOperatorCalls_endWithTheirContext(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		if _, err := c.Acquire(bg, "k"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.List(bg, ""); err != nil { // loads the scan script
			t.Fatal(err)
		}
		for _, n := range cluster.Nodes()[1:] {
			if err := n.Pause(); err != nil {
				t.Fatal(err)
			}
			defer n.Resume()
		}
		// Far below the 3 s operator timeout, far above the context's
		// 100 ms: a bound no scheduling delay reaches.
		const bound = 900 * time.Millisecond
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		start := time.Now()
		_, err := c.List(ctx, "")
		cancel()
		if took := time.Since(start); took > bound || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("List under a 100 ms context took %v: %v", took, err)
		}
		ctx, cancel = context.WithTimeout(bg, 100*time.Millisecond)
		start = time.Now()
		_, err = c.ForceRelease(ctx, "k", "ops:test")
		cancel()
		if took := time.Since(start); took > bound || !errors.Is(err, redlock.ErrNotReleased) {
			t.Errorf("ForceRelease under a 100 ms context took %v: %v", took, err)
		}
	})
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestAcquire_mutualExclusion(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		for _, nodes := range []int{1, 5} {
			t.Run(fmt.Sprintf("%dnodes", nodes), func(t *testing.T) {
				cluster := redlocktest.Start(t, redlocktest.Options{Nodes: nodes})
				const workers, rounds = 8, 15
				var counter atomic.Int64 // read and written apart: only the lock makes it safe
				var holders, maxHolders atomic.Int32
				var wg sync.WaitGroup
				for w := range workers {
					// One client per worker, as separate processes would have.
					client := newClient(t, cluster, a, &redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second,
						Retry: redlock.Jittered(time.Millisecond, 5*time.Millisecond)})
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range rounds {
							lock, err := client.Acquire(bg, "counter")
							if err != nil {
								t.Errorf("worker %d: %v", w, err)
								return
							}
							if h := holders.Add(1); h > maxHolders.Load() {
								maxHolders.Store(h)
							}
							v := counter.Load()
							time.Sleep(100 * time.Microsecond)
							counter.Store(v + 1)
							holders.Add(-1)
							if err := lock.Release(bg); err != nil {
								t.Errorf("worker %d: release: %v", w, err)
							}
						}
					}()
				}
				wg.Wait()
				if got := counter.Load(); got != workers*rounds {
					t.Errorf("counter = %d after %d locked increments: updates were lost", got, workers*rounds)
				}
				if m := maxHolders.Load(); m != 1 {
					t.Errorf("%d holders at once", m)
				}
			})
		}
	})
}

func TestAcquire_minorityDown(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
		client := newClient(t, cluster, a, fast())
		for _, i := range []int{1, 3} {
			if err := cluster.Node(i).Kill(); err != nil {
				t.Fatal(err)
			}
		}
		lock, err := client.TryAcquire(bg, "minority")
		if err != nil {
			t.Fatalf("2 of 5 nodes down: %v", err)
		}
		waitForKey(t, cluster, "minority", lock.Token()) // on the running nodes
		for i, n := range cluster.Nodes() {
			if got := n.Running() && keyOn(t, n, "minority") == lock.Token(); got != (i != 1 && i != 3) {
				t.Errorf("node %d holds the lock: %v", i, got)
			}
		}
		if err := lock.Extend(bg, 0); err != nil {
			t.Errorf("extend with 2 of 5 down: %v", err)
		}
		if err := lock.Release(bg); err != nil {
			t.Errorf("release with 2 of 5 down: %v", err)
		}
	})
}

func TestAcquire_majorityDown(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
		client := newClient(t, cluster, a, fast())
		for _, i := range []int{0, 2, 4} {
			if err := cluster.Node(i).Kill(); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		_, err := client.TryAcquire(bg, "majority")
		took := time.Since(start)
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("3 of 5 nodes down: err = %v, want ErrNotAcquired", err)
		}
		qe := quorumError(t, err)
		if qe.OK > 2 || qe.Quorum != 3 || len(qe.Nodes) != 5 {
			t.Errorf("detail: OK=%d Quorum=%d nodes=%d", qe.OK, qe.Quorum, len(qe.Nodes))
		}
		for _, i := range []int{0, 2, 4} {
			if r := qe.Nodes[i]; r.Outcome != redlock.OutcomeError && r.Outcome != redlock.OutcomeNoAnswer {
				t.Errorf("dead node %d reported %s", i, r.Outcome)
			}
		}
		if !strings.Contains(err.Error(), cluster.Node(0).Addr()) {
			t.Errorf("error does not name the nodes: %v", err)
		}
		// A refused connection fails at once; two node timeouts are the bound.
		if bound := 2 * fast().NodeTimeout; took > bound+time.Second {
			t.Errorf("TryAcquire took %s with dead nodes, bound %s", took, bound)
		}
		// The clean-up of nodes that had not answered when the failure was
		// decided follows their answer, just after the call returned.
		for _, i := range []int{1, 3} {
			if v := eventuallyGone(t, cluster.Node(i), "majority"); v != "" {
				t.Errorf("node %d kept key after a failed acquire: %q", i, v)
			}
		}
	})
}

// eventuallyGone waits up to a second for key to disappear from node n and
// returns its last value, "" when gone.
func eventuallyGone(t testing.TB, n *redlocktest.Node, key string) string {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		v := keyOn(t, n, key)
		if v == "" || time.Now().After(deadline) {
			return v
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAcquire_pausedNodes(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
		opts := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 400 * time.Millisecond}
		client := newClient(t, cluster, a, opts)
		// Warm the connections so that pausing blocks replies, not dials.
		if l, err := client.TryAcquire(bg, "warm"); err != nil {
			t.Fatal(err)
		} else {
			l.Release(bg)
		}
		for _, i := range []int{0, 1} {
			if err := cluster.Node(i).Pause(); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { cluster.Node(0).Resume(); cluster.Node(1).Resume() })

		start := time.Now()
		lock, err := client.TryAcquire(bg, "paused")
		if err != nil {
			t.Fatalf("2 of 5 paused: %v", err)
		}
		if took := time.Since(start); took >= opts.NodeTimeout {
			t.Errorf("acquire with a paused minority took %s: it waited on the paused nodes", took)
		}
		if left := time.Until(lock.Until()); left <= 9*time.Second {
			t.Errorf("validity %s, want close to 10 s - drift", left)
		}
		lock.Release(bg)

		if err := cluster.Node(2).Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cluster.Node(2).Resume() })
		start = time.Now()
		_, err = client.TryAcquire(bg, "paused-majority")
		took := time.Since(start)
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("3 of 5 paused: %v", err)
		}
		if n := countOutcomes(quorumError(t, err))[redlock.OutcomeTimeout]; n != 3 {
			t.Errorf("%d timeouts reported, want 3: %v", n, err)
		}
		if took < opts.NodeTimeout || took > 2*opts.NodeTimeout+time.Second {
			t.Errorf("failed acquire took %s, want between one and two node timeouts (%s)", took, opts.NodeTimeout)
		}
	})
}

func TestAcquire_failureLeavesNoKey(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	client := newClient(t, cluster, adapters[0], fast())
	for _, i := range []int{0, 1, 2} {
		if _, err := cluster.Node(i).Do(bg, "SET", "taken", "someone-else", "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := client.TryAcquire(bg, "taken")
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want ErrNotAcquired", err)
	}
	if n := countOutcomes(quorumError(t, err))[redlock.OutcomeHeld]; n < 1 {
		t.Errorf("no node reported the lock as held: %v", err)
	}
	for i, n := range cluster.Nodes() {
		want := ""
		if i < 3 {
			want = "someone-else"
		}
		got := keyOn(t, n, "taken")
		if want == "" {
			got = eventuallyGone(t, n, "taken")
		}
		if got != want {
			t.Errorf("node %d: key = %q, want %q", i, got, want)
		}
	}
}

func TestAcquire_foreignLockBlocks(t *testing.T) {
	// What redsync and node-redlock write: SET key random NX PX ttl.
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "SET", "shared-resource", "their-token", "NX", "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	forEachAdapter(t, func(t *testing.T, a adapter) {
		client := newClient(t, cluster, a, fast())
		_, err := client.TryAcquire(bg, "shared-resource")
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("err = %v, want ErrNotAcquired", err)
		}
		if n := countOutcomes(quorumError(t, err))[redlock.OutcomeHeld]; n < 2 {
			t.Errorf("%d nodes report held: %v", n, err)
		}
		// And a key with a prefix is another lock.
		prefixed := newClient(t, cluster, a, &redlock.Options{KeyPrefix: "app:", TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond})
		lock, err := prefixed.TryAcquire(bg, "shared-resource")
		if err != nil {
			t.Fatalf("prefixed key: %v", err)
		}
		if lock.WireKey() != "app:shared-resource" || lock.Key() != "shared-resource" {
			t.Errorf("prefixed lock key %q, name %q", lock.WireKey(), lock.Key())
		}
		waitForKey(t, cluster, "app:shared-resource", lock.Token())
		lock.Release(bg)
	})
}

func TestAcquire_waitsForRelease(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	first, err := client.TryAcquire(bg, "handoff")
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		released <- first.Release(bg)
	}()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	second, err := client.Acquire(ctx, "handoff")
	if err != nil {
		t.Fatalf("Acquire did not get the lock after its release: %v", err)
	}
	// The nodes may grant the waiter before the releasing goroutine has
	// heard back from them: wait for Release to return.
	if err := <-released; err != nil {
		t.Errorf("release: %v", err)
	}
	if first.Err() == nil {
		t.Error("the first lock still reports being held")
	}
	second.Release(bg)
}

func TestAcquire_contextEnds(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	held, err := client.TryAcquire(bg, "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)

	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	_, err = client.Acquire(ctx, "busy")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("err = %v, want both context.DeadlineExceeded and ErrNotAcquired", err)
	}

	// A retry strategy that gives up says so without a context error.
	_, err = client.Acquire(bg, "busy", redlock.WithRetry(redlock.LimitAttempts(redlock.Jittered(0, time.Millisecond), 3)))
	if !errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrNotAcquired alone", err)
	}

	ctx, cancel = context.WithCancel(bg)
	cancel()
	_, err = client.Acquire(ctx, "free")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: err = %v", err)
	}
}

// A call whose context has ended asks no node, and says so: each node is
// "not asked", not "no answer", whatever the shape of the lock.
func TestAcquire_endedContextAsksNoNode(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	ctx, cancel := context.WithCancel(bg)
	cancel()
	calls := map[string]func() error{
		"Acquire":    func() error { _, err := client.Acquire(ctx, "free"); return err },
		"TryAcquire": func() error { _, err := client.TryAcquire(ctx, "free"); return err },
		"permit":     func() error { _, err := client.Acquire(ctx, "free", redlock.WithLimit(2)); return err },
		"reader":     func() error { _, err := client.Acquire(ctx, "free", redlock.WithShared()); return err },
		"several":    func() error { _, err := client.AcquireAll(ctx, []string{"free", "other"}); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := call()
			if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
				t.Fatalf("%v, want ErrNotAcquired and context.Canceled", err)
			}
			wantNotAsked(t, err, "context canceled before any node was asked")
		})
	}
}

// wantNotAsked fails the test unless err says that no node was asked, and
// why, and lists each node as not asked.
func wantNotAsked(t *testing.T, err error, why string) {
	t.Helper()
	if msg := err.Error(); !strings.Contains(msg, why) || strings.Contains(msg, "no answer") {
		t.Errorf("%q does not say %q", msg, why)
	}
	for _, r := range quorumError(t, err).Nodes {
		if r.Outcome.String() != "not asked" {
			t.Errorf("node %s: %s, want not asked", r.Node, r.Outcome)
		}
	}
}

func TestAcquire_badInput(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	if _, err := client.TryAcquire(bg, ""); !errors.Is(err, redlock.ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
	for _, ttl := range []time.Duration{time.Millisecond, 2 * time.Millisecond, -time.Second} {
		if _, err := client.TryAcquire(bg, "k", redlock.WithTTL(ttl)); !errors.Is(err, redlock.ErrInvalidTTL) {
			t.Errorf("TTL %s: %v", ttl, err)
		}
	}
	if _, err := redlock.New(nil, nil); !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Errorf("no nodes: %v", err)
	}
	conns := goredisConns(t, []string{cluster.Addrs()[0], cluster.Addrs()[1], cluster.Addrs()[0]})
	if _, err := redlock.New(conns, nil); !errors.Is(err, redlock.ErrDuplicateNode) {
		t.Errorf("duplicate node: %v", err)
	}
	for _, o := range []redlock.Options{{DriftFactor: 0.7}, {NodeTimeout: -1}, {TTL: time.Millisecond}, {MaxExtensions: -1}} {
		if _, err := redlock.New(goredisConns(t, cluster.Addrs()), &o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	for key := range 3 {
		if v := keyOn(t, cluster.Node(key), "k"); v != "" {
			t.Errorf("a rejected call left key k on node %d", key)
		}
	}
}

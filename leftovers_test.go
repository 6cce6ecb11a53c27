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

// A lone node that stops answering for longer than the background
// releases of failed attempts last runs those attempts once it answers
// again, and may grant keys to tokens nobody holds, after their releases
// were given up or ran first. The client that sent them clears them the
// first time the node refuses it the key: each key is granted again within
// moments of the node's return, not a TTL later.
func TestLeftovers_loneNodeBackGrantsAgainAtOnce(t *testing.T) {
	for _, a := range withDial() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			testLeftoversCleared(t, a)
		})
	}
}

func testLeftoversCleared(t *testing.T, a adapter) {
	const ttl = 30 * time.Second
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClientOrDial(t, cluster, a, &redlock.Options{TTL: ttl})
	keys := leaveAttemptsOnAPausedNode(t, cluster, c)
	for _, key := range keys {
		awaitGranted(t, cluster, c, key, ttl/6)
	}
}

// A Client does not wait to be refused a key to clear its stale grants:
// soon after a node that missed its releases answers again, it sends them
// there, all of them, so that another client, which cannot clear them,
// gets the keys within moments too, not a TTL later. While the node stays
// silent, the Client keeps the tokens; once their releases are answered,
// it forgets them.
func TestLeftovers_sweptOnceTheNodeAnswers(t *testing.T) {
	for _, a := range withDial() {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			const ttl = 30 * time.Second
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
			c := newClientOrDial(t, cluster, a, &redlock.Options{TTL: ttl})
			other := newClientOrDial(t, cluster, a, &redlock.Options{TTL: ttl})
			// Nodes 0 and 1 ran two old attempts of c's after their
			// releases were given up, and hold two keys for tokens nobody
			// holds; node 1 is silent now. Node 2 holds the keys for
			// another client, so that a grant needs nodes 0 and 1.
			keys, tokens := []string{"stale-a", "stale-b"}, []string{"old-a", "old-b"}
			for i := range keys {
				for node, token := range []string{tokens[i], tokens[i], "live"} {
					if _, err := cluster.Node(node).Do(bg, "SET", keys[i], token, "PX", "30000"); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := cluster.Node(1).Pause(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resumeAll(t, cluster) })
			for i := range keys {
				c.RememberMissedRelease(keys[i], tokens[i], ttl, []bool{true, true, false})
			}

			// The sweep asks a node by the release of its oldest leftover:
			// the second key is cleared by the sweep itself.
			awaitCleared(t, cluster.Node(0), "stale-b", 5*time.Second)
			// Two rounds more, while node 1 stays silent: both tokens stay
			// remembered for it.
			time.Sleep(2500 * time.Millisecond)
			if n := c.Leftovers(); n != 2 {
				t.Fatalf("%d tokens remembered while node 1 is silent, want 2", n)
			}
			if err := cluster.Node(1).Resume(); err != nil {
				t.Fatal(err)
			}
			awaitCleared(t, cluster.Node(1), "stale-b", 5*time.Second)
			awaitGranted(t, cluster, other, "stale-b", time.Second)
			for deadline := time.Now().Add(5 * time.Second); c.Leftovers() != 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d tokens still remembered 5s after every release was answered", c.Leftovers())
				}
			}
		})
	}
}

// awaitCleared polls node until it no longer holds key, and fails the test
// if it still does after bound.
func awaitCleared(t *testing.T, node *redlocktest.Node, key string, bound time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(bound); keyOn(t, node, key) != ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("node %d still holds %s for %q %v later", node.Index(), key, keyOn(t, node, key), bound)
		}
	}
}

// leaveAttemptsOnAPausedNode takes and releases 40 keys by c on cluster's
// one node, then pauses the node for longer than the background releases
// of failed attempts last, while c tries every key again and again: every
// attempt fails, and leaves its request in the node's sockets, which the
// node runs once resumed. It returns the keys.
func leaveAttemptsOnAPausedNode(t *testing.T, cluster *redlocktest.Cluster, c *redlock.Client) []string {
	t.Helper()
	const hang = 8 * time.Second
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprint("hung:", i)
		l, err := c.TryAcquire(bg, keys[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
	pauseAll(t, cluster)
	var wg sync.WaitGroup
	end := time.Now().Add(hang)
	for _, key := range keys {
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := c.TryAcquire(bg, key); err == nil {
					t.Errorf("%s granted while the node is paused", key)
				}
			}
		})
	}
	wg.Wait()
	resumeAll(t, cluster)
	return keys
}

// awaitGranted tries key by c until it is granted, and fails the test if it
// is not within bound.
func awaitGranted(t *testing.T, cluster *redlocktest.Cluster, c *redlock.Client, key string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		l, err := c.TryAcquire(bg, key)
		if err == nil {
			l.Release(bg)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not granted %v after the node's return (held there: %q): %v",
				key, bound, keyOn(t, cluster.Node(0), key), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Of several nodes, one that was silent for long may hold a key for an old
// attempt while the others grant it: the next grant of the key clears it
// there, in the background, so that the node is not lost to the key for a
// TTL (and one more fault then stops every grant).
func TestLeftovers_minorityNodeClearedAfterAGrant(t *testing.T) {
	t.Parallel()
	const ttl, hang = 30 * time.Second, 8 * time.Second
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], &redlock.Options{TTL: ttl})
	silent := cluster.Node(0)
	if err := silent.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resumeAll(t, cluster) })
	// A try may fail on a busy host (the two nodes up must both answer in
	// time): it leaves its request on the silent node all the same.
	for end := time.Now().Add(hang); time.Now().Before(end); {
		if l, err := c.TryAcquire(bg, "minority"); err == nil {
			if err := l.Release(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := silent.Resume(); err != nil {
		t.Fatal(err)
	}
	// Answered once the node ran what it was sent before (the release of
	// the try that may hold the key there may have run first, or never).
	t.Logf("the node back holds %q", keyOn(t, silent, "minority"))
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, "minority")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		held := keyOn(t, silent, "minority")
		if held == "" || held == l.Token() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node back still holds the key for %q, 5s after a grant", held)
		}
	}
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
}

// A node that refuses a Client a key for one of its own old tokens gets
// that token's release again: a failed TryAcquire sends it before it
// returns, so the next one wins; Acquire wins at its next attempt; and of
// several nodes, one that still holds the key for an old token while the
// others grant it is cleared in the background. No sweep runs here: only
// the refusals clear the keys.
func TestLeftovers_refusingNodeClearedByTheClient(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		const ttl = 30 * time.Second
		t.Run("one node", func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
			c := newClient(t, cluster, a, &redlock.Options{TTL: ttl, NodeTimeout: 300 * time.Millisecond})
			for _, key := range []string{"try", "acquire"} {
				plantStale(t, cluster, key, "old-"+key, []int{0})
				c.RememberUnswept(key, "old-"+key, ttl, []bool{true})
			}
			if _, err := c.TryAcquire(bg, "try"); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("TryAcquire of a key held by an old token = %v, want ErrNotAcquired", err)
			}
			if v := keyOn(t, cluster.Node(0), "try"); v != "" {
				t.Fatalf("the failed TryAcquire returned with the key still held by %q", v)
			}
			l, err := c.TryAcquire(bg, "try")
			if err != nil {
				t.Fatalf("TryAcquire after the old token's release: %v", err)
			}
			l.Release(bg)
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			if l, err = c.Acquire(ctx, "acquire"); err != nil {
				t.Fatalf("Acquire of a key held by an old token: %v", err)
			}
			l.Release(bg)
			if n := c.Leftovers(); n != 0 {
				t.Errorf("%d tokens still remembered after their releases were answered", n)
			}
		})
		t.Run("minority node", func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
			c := newClient(t, cluster, a, &redlock.Options{TTL: ttl, NodeTimeout: 300 * time.Millisecond})
			plantStale(t, cluster, "minority", "old", []int{0})
			c.RememberUnswept("minority", "old", ttl, []bool{true, false, false})
			l, err := c.TryAcquire(bg, "minority")
			if err != nil {
				t.Fatal(err)
			}
			awaitCleared(t, cluster.Node(0), "minority", 5*time.Second)
			l.Release(bg)
		})
	})
}

// plantStale sets key to token, for 30 s, on the nodes of cluster listed,
// as an old attempt that ran after its release leaves it.
func plantStale(t *testing.T, cluster *redlocktest.Cluster, key, token string, on []int) {
	t.Helper()
	for _, i := range on {
		if _, err := cluster.Node(i).Do(bg, "SET", key, token, "PX", "30000"); err != nil {
			t.Fatal(err)
		}
	}
}

package redlock_test

import (
	"context"
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
	const ttl, hang, keys = 30 * time.Second, 8 * time.Second, 40
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClientOrDial(t, cluster, a, &redlock.Options{TTL: ttl})
	key := func(i int) string { return fmt.Sprint("hung:", i) }
	for i := range keys {
		l, err := c.TryAcquire(bg, key(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(bg); err != nil {
			t.Fatal(err)
		}
	}

	// The node silent for longer than the background releases last: every
	// attempt on every key fails, and leaves its request in the node's
	// sockets.
	pauseAll(t, cluster)
	var wg sync.WaitGroup
	end := time.Now().Add(hang)
	for i := range keys {
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := c.TryAcquire(bg, key(i)); err == nil {
					t.Errorf("%s granted while the node is paused", key(i))
				}
			}
		})
	}
	wg.Wait()
	resumeAll(t, cluster)

	for i := range keys {
		deadline := time.Now().Add(ttl / 6)
		for {
			l, err := c.TryAcquire(bg, key(i))
			if err == nil {
				l.Release(bg)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not granted %v after the node's return (held there: %q): %v",
					key(i), ttl/6, keyOn(t, cluster.Node(0), key(i)), err)
			}
			time.Sleep(10 * time.Millisecond)
		}
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

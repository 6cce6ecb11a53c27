package redlock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestNew_refusesOptionsNoNodeCanMeet(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	for name, opts := range map[string]redlock.Options{
		"NaN drift":         {DriftFactor: math.NaN()},
		"infinite drift":    {DriftFactor: math.Inf(1)},
		"1ns node timeout":  {NodeTimeout: time.Nanosecond},
		"negative timeout":  {NodeTimeout: -time.Second},
		"999µs per node":    {NodeTimeout: 999 * time.Microsecond},
		"negative recovery": {RecoveryDelay: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := redlock.New(goredisConns(t, cluster.Addrs()), &opts)
			if !errors.Is(err, redlock.ErrInvalidOptions) {
				if c != nil {
					c.Close()
				}
				t.Fatalf("New(%+v) = %v, want ErrInvalidOptions", opts, err)
			}
		})
	}
}

func TestNilContext_failsClearlyOrReleases(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		//lint:ignore SA1012 a nil context is the bad input under test
		if _, err := c.Acquire(nil, "nil-ctx"); err == nil || !strings.Contains(err.Error(), "nil context") {
			t.Errorf("Acquire(nil) = %v, want a nil context error", err)
		}
		//lint:ignore SA1012 as above
		if _, err := c.TryAcquire(nil, "nil-ctx"); err == nil {
			t.Error("TryAcquire(nil) succeeded")
		}
		//lint:ignore SA1012 as above
		if err := c.Do(nil, "nil-ctx", func(context.Context) error { return nil }); err == nil {
			t.Error("Do(nil) succeeded")
		}
		//lint:ignore SA1012 as above
		if _, err := c.Inspect(nil, "nil-ctx"); err == nil {
			t.Error("Inspect(nil) succeeded")
		}
		//lint:ignore SA1012 as above
		if err := c.MarkReady(nil, false); err == nil {
			t.Error("MarkReady(nil) succeeded")
		}
		lock, err := c.Acquire(bg, "nil-ctx")
		if err != nil {
			t.Fatal(err)
		}
		//lint:ignore SA1012 as above
		if err := lock.Extend(nil, 0); err == nil {
			t.Error("Extend(nil) succeeded")
		}
		// A release runs whatever its context: nothing stays locked.
		//lint:ignore SA1012 as above
		if err := lock.Release(nil); err != nil {
			t.Fatalf("Release(nil) = %v", err)
		}
		for i, n := range cluster.Nodes() {
			// Release returns at a quorum; the other nodes follow.
			if v := eventuallyGone(t, n, "nil-ctx"); v != "" {
				t.Errorf("node %d still holds %q after Release(nil)", i, v)
			}
		}
	})
}

func TestLongKey_refusedWithAShortMessage(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], fast())
	huge := strings.Repeat("k", 1<<20)
	_, err := c.TryAcquire(bg, huge)
	if !errors.Is(err, redlock.ErrInvalidKey) {
		t.Fatalf("TryAcquire(1 MiB key) = %v, want ErrInvalidKey", err)
	}
	if n := len(err.Error()); n > 300 {
		t.Errorf("error of %d bytes for a long key: %.100s…", n, err)
	}
	// The longest key accepted: errors quote it shortened.
	longest := strings.Repeat("x", 4096)
	lock, err := c.TryAcquire(bg, longest)
	if err != nil {
		t.Fatalf("TryAcquire(4096-byte key) = %v", err)
	}
	_, err = c.TryAcquire(bg, longest)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("second TryAcquire = %v, want ErrNotAcquired", err)
	}
	if n := len(err.Error()); n > 400 || !strings.Contains(err.Error(), "4096 bytes") {
		t.Errorf("error of %d bytes does not quote the key shortened: %.200s", n, err)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
}

// MarkReady is an operator's call: a node slower than the lock's per-node
// timeout is still marked.
func TestMarkReady_waitsForASlowNode(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c, err := redlock.New(goredisConns(t, cluster.Addrs()), &redlock.Options{NodeTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	node := cluster.Node(0)
	if err := node.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		resumed <- node.Resume()
	}()
	if err := c.MarkReady(bg, false); err != nil {
		t.Errorf("MarkReady on a node 300 ms slow = %v", err)
	}
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	if v := keyOn(t, node, redlock.MarkerKey); v != "0" {
		t.Errorf("marker %q after MarkReady, want 0", v)
	}
}

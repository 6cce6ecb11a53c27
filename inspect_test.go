package redlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestInspect(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
		opts := &redlock.Options{TTL: 2 * time.Second, RecoveryDelay: 5 * time.Second, NodeTimeout: 300 * time.Millisecond,
			KeyPrefix: "app:"}
		client := newClient(t, cluster, a, opts)
		lock, err := client.TryAcquire(bg, "inspected")
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release(bg)
		waitForKey(t, cluster, "app:inspected", lock.Token())
		states, err := client.Inspect(bg, "inspected")
		if err != nil {
			t.Fatal(err)
		}
		if len(states) != 5 {
			t.Fatalf("%d states for 5 nodes", len(states))
		}
		for i, s := range states {
			if s.Node != cluster.Node(i).Addr() || s.Err != nil || s.Holder != lock.Token() ||
				s.TTL <= 0 || s.TTL > 2*time.Second || s.Fence == 0 || s.Recovering || s.NoMarker {
				t.Errorf("node %d: %+v", i, s)
			}
		}
		agree := 0
		for _, s := range states {
			if s.Fence == lock.Fence() {
				agree++
			}
		}
		if agree < 3 {
			t.Errorf("%d nodes have the lock's fence %d, want at least a quorum: %+v", agree, lock.Fence(), states)
		}

		// A free key, a foreign key without expiry, a dead node and a
		// node restarted without its data.
		if _, err := cluster.Node(1).Do(bg, "SET", "app:foreign", "their-token"); err != nil {
			t.Fatal(err)
		}
		if err := cluster.Node(4).Restart(bg); err != nil {
			t.Fatal(err)
		}
		// A new client: connections from before the restart may fail once.
		client = coldClient(t, cluster, a, opts)
		if err := cluster.Node(3).Kill(); err != nil {
			t.Fatal(err)
		}
		states, err = client.Inspect(bg, "foreign")
		if err != nil {
			t.Fatal(err)
		}
		if s := states[0]; s.Err != nil || s.Holder != "" || s.TTL != 0 || s.Fence != 0 || s.Recovering {
			t.Errorf("free key: %+v", s)
		}
		if s := states[1]; s.Err != nil || s.Holder != "their-token" || s.TTL >= 0 {
			t.Errorf("foreign key without expiry: %+v", s)
		}
		if s := states[3]; s.Err == nil {
			t.Errorf("dead node: %+v", s)
		}
		if s := states[4]; s.Err != nil || !s.NoMarker || !s.Recovering || s.RecoveringLeft != opts.RecoveryDelay {
			t.Errorf("node restarted empty: %+v", s)
		}
		// Inspect changes nothing: the restarted node still has no marker.
		if v := keyOn(t, cluster.Node(4), redlock.MarkerKey); v != "" {
			t.Errorf("Inspect wrote the marker: %q", v)
		}
		// The first acquisition starts its quarantine (it may return before
		// the node answered).
		client.TryAcquire(bg, "other")
		deadline := time.Now().Add(2 * time.Second)
		for keyOn(t, cluster.Node(4), redlock.MarkerKey) == "" && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		states, _ = client.Inspect(bg, "other")
		if s := states[4]; s.NoMarker || !s.Recovering || s.RecoveringLeft <= 0 || s.RecoveringLeft > opts.RecoveryDelay {
			t.Errorf("node restarted empty, after an acquisition: %+v", s)
		}

		if _, err := client.Inspect(bg, ""); err == nil {
			t.Error("empty key accepted")
		}
	})
}

// A restart marker that is not a number is the node's error in Inspect, as in
// an acquisition, unless the quarantine is off; MarkReady replaces it.
func TestInspect_markerNotANumber(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	if _, err := node.Do(bg, "SET", redlock.MarkerKey, "not a time"); err != nil {
		t.Fatal(err)
	}
	opts := &redlock.Options{TTL: 2 * time.Second, RecoveryDelay: 5 * time.Second, NodeTimeout: 300 * time.Millisecond}
	client := coldClient(t, cluster, adapters[0], opts)
	states, err := client.Inspect(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	want := `redlock: redlock:marker is "not a time", not a time in microseconds`
	if s := states[0]; s.Err == nil || s.Err.Error() != want || s.Recovering || s.NoMarker {
		t.Errorf("marker not a number: %+v, want the error %q", s, want)
	}
	if _, err := client.TryAcquire(bg, "k"); err == nil || !strings.Contains(err.Error(), "is not a time in microseconds") {
		t.Errorf("acquire with a marker not a number: %v", err)
	}

	off := *opts
	off.DisableQuarantine = true
	states, err = coldClient(t, cluster, adapters[1], &off).Inspect(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	if s := states[0]; s.Err != nil || s.Recovering || s.RecoveringLeft != 0 || s.NoMarker {
		t.Errorf("marker not a number, quarantine off: %+v", s)
	}

	if err := client.MarkReady(bg); err != nil {
		t.Fatal(err)
	}
	if v := keyOn(t, node, redlock.MarkerKey); v != "0" {
		t.Errorf("marker %q after MarkReady, want 0", v)
	}
	states, _ = client.Inspect(bg, "k")
	if s := states[0]; s.Err != nil || s.Recovering || s.RecoveringLeft != 0 || s.NoMarker {
		t.Errorf("after MarkReady: %+v", s)
	}
}

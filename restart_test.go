package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A node that crashes and reloads an RDB snapshot taken before a lock was
// granted has its restart marker but not the lock: it must not vote until
// the lock it forgot has expired, or a second client gets it.
func TestQuarantine_restartFromSnapshot(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		node := cluster.Node(0)
		first := newClient(t, cluster, a, fast())
		warm, err := first.TryAcquire(bg, "warm-up") // writes the marker and its writer
		if err != nil {
			t.Fatal(err)
		}
		warm.Release(bg)
		if _, err := node.Do(bg, "SAVE"); err != nil { // the snapshot: marker, no lock
			t.Fatal(err)
		}
		held, err := first.TryAcquire(bg, "job")
		if err != nil {
			t.Fatal(err)
		}
		if err := node.Restart(bg); err != nil { // kill -9, reload the snapshot
			t.Fatal(err)
		}
		if keyOn(t, node, redlock.MarkerKey) == "" || keyOn(t, node, "job") != "" {
			t.Fatal("the snapshot should hold the marker and not the lock")
		}
		second := coldClient(t, cluster, a, fast())
		lock, err := tryAcquireRetrying(second, "job")
		if err == nil {
			lock.Release(bg)
			t.Fatalf("a second client got the lock while the first holds it until %s", held.Until().Format(time.StampMicro))
		}
		var qe *redlock.QuorumError
		if !errors.As(err, &qe) || qe.Nodes[0].Outcome != redlock.OutcomeRecovering {
			t.Fatalf("second acquisition: %v, want the node recovering", err)
		}
		// The refusal started the countdown: Inspect shows it running,
		// not the whole delay.
		states, err := second.Inspect(bg, "job")
		if err != nil {
			t.Fatal(err)
		}
		const delay = 30 * time.Second // the default RecoveryDelay
		if s := states[0]; s.Restarted || !s.Recovering || s.RecoveringLeft <= 0 || s.RecoveringLeft >= delay {
			t.Errorf("Inspect after the countdown started: %+v, want recovering for less than %s, no longer a restart to come", s, delay)
		}
	})
}

// A replica promoted after its link to the master was cut has the master's
// marker but not the locks granted since: it sits out the recovery delay.
func TestQuarantine_failoverToALaggingReplica(t *testing.T) {
	t.Parallel()
	forEachAdapter(t, func(t *testing.T, a adapter) {
		master := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		replica := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
			Config: []string{"replicaof 127.0.0.1 " + strings.Split(master.Addrs()[0], ":")[1]}})
		first := newClient(t, master, a, fast())
		warm, err := first.TryAcquire(bg, "warm-up")
		if err != nil {
			t.Fatal(err)
		}
		warm.Release(bg)
		waitReplicated(t, replica.Node(0), redlock.ProcessKey)
		// The link is cut, a lock is granted, the master dies and the
		// replica takes over.
		if _, err := replica.Node(0).Do(bg, "REPLICAOF", "NO", "ONE"); err != nil {
			t.Fatal(err)
		}
		held, err := first.TryAcquire(bg, "job")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release(bg)
		if err := master.Node(0).Kill(); err != nil {
			t.Fatal(err)
		}
		promoted := coldClient(t, replica, a, fast())
		states, err := promoted.Inspect(bg, "job")
		if err != nil || !states[0].Restarted || !states[0].Recovering {
			t.Fatalf("Inspect on the promoted replica: %+v, %v; want restarted and recovering", states, err)
		}
		lock, err := tryAcquireRetrying(promoted, "job")
		if err == nil {
			lock.Release(bg)
			t.Fatal("the promoted replica granted a lock the old master holds")
		}
		var qe *redlock.QuorumError
		if !errors.As(err, &qe) || qe.Nodes[0].Outcome != redlock.OutcomeRecovering {
			t.Fatalf("acquisition on the promoted replica: %v, want it recovering", err)
		}
	})
}

// waitReplicated waits until key exists on n.
func waitReplicated(t *testing.T, n *redlocktest.Node, key string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); keyOn(t, n, key) == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the replica", key)
		}
	}
}

// tryAcquireRetrying makes an attempt, and a few more while the error is a
// connection's (a node that just restarted), not the nodes' answer.
func tryAcquireRetrying(c *redlock.Client, key string) (*redlock.Lock, error) {
	var err error
	for try := 0; try < 10; try++ {
		var lock *redlock.Lock
		lock, err = c.TryAcquire(bg, key)
		var qe *redlock.QuorumError
		if err == nil || !errors.As(err, &qe) || qe.Nodes[0].Outcome != redlock.OutcomeError {
			return lock, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, err
}

// Where an ACL refuses INFO, the quarantine cannot see a restart that
// reloaded older data (the marker's writer is the node's run_id), and such
// a node would vote with a lock forgotten: Dial refuses it as it refuses a
// wrong password, a Client made without Dial fails fast on it and leaves
// nothing locked, and with the quarantine off it takes locks.
func TestQuarantine_infoRefusedIsAConfigurationError(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	urls := userURLs(t, cluster, "locker", "-@dangerous")
	forEachDialer(t, func(t *testing.T, d dialer) {
		c, err := d.dial(bg, urls, fast())
		if err == nil {
			c.Close()
			t.Fatal("Dial took nodes that refuse the user INFO")
		}
		if !errors.Is(err, d.errInvalidURL) || !strings.Contains(err.Error(), "+info") {
			t.Errorf("Dial: %v, want %v saying to grant +info", err, d.errInvalidURL)
		}
		off := fast()
		off.DisableQuarantine = true
		c, err = d.dial(bg, urls, off)
		if err != nil {
			t.Fatalf("Dial with the quarantine off: %v", err)
		}
		defer c.Close()
		lockAndRelease(t, c, "no-info-no-quarantine")
	})
	forEachAdapter(t, func(t *testing.T, a adapter) {
		c := urlClient(t, a, urls)
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		_, err := c.Acquire(ctx, "no-info")
		if !errors.Is(err, redlock.ErrInvalidOptions) || !strings.Contains(err.Error(), "INFO") || ctx.Err() != nil {
			t.Errorf("Acquire with INFO refused: %v, want ErrInvalidOptions naming INFO, at once", err)
		}
		for _, n := range cluster.Nodes() {
			if v := keyOn(t, n, "no-info"); v != "" {
				t.Errorf("%s: the key holds %q after a refused acquisition", n.Addr(), v)
			}
		}
		if err := c.MarkReady(bg, false); err == nil || !strings.Contains(err.Error(), "INFO") {
			t.Errorf("MarkReady with INFO refused: %v, want an error naming INFO", err)
		}
	})
}

// MarkReady refuses a node that restarted and has not sat out its recovery
// delay, which may have forgotten a lock still held, unless forced: it
// marks no node, and says which one restarted.
func TestMarkReady_refusesARestartedNodeUnlessForced(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, AppendFsyncAlways: true})
	c := newClient(t, cluster, adapters[0], fast())
	lock, err := c.TryAcquire(bg, "held")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	waitForKey(t, cluster, "held", lock.Token())
	if err := cluster.Node(1).Restart(bg); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"restarted", "quarantine started"} {
		err := c.MarkReady(bg, false)
		if !errors.Is(err, redlock.ErrNotBrandNew) || !strings.Contains(err.Error(), cluster.Node(1).Addr()+" restarted, failed over or lost its data") {
			t.Fatalf("%s: MarkReady = %v, want node 1 refused", phase, err)
		}
		if states, err := c.Inspect(bg, "held"); err != nil || !states[1].Recovering {
			t.Errorf("%s: %+v, %v; want node 1 still recovering", phase, states, err)
		}
		// An acquisition starts the node's quarantine; it stays refused.
		if l, err := tryAcquireRetrying(c, "probe-"+phase); err == nil {
			l.Release(bg)
		}
	}
	if err := c.MarkReady(bg, true); err != nil {
		t.Fatalf("forced MarkReady = %v", err)
	}
	if states, err := c.Inspect(bg, "held"); err != nil || states[1].Recovering || states[1].Restarted {
		t.Fatalf("after a forced MarkReady: %+v, %v; want node 1 ready", states, err)
	}
}

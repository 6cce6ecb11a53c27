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

// masterWithReplica starts a master and a replica of it, and waits until
// the replica is in sync.
func masterWithReplica(t *testing.T) (master, replica *redlocktest.Cluster) {
	t.Helper()
	master = redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	replica = redlocktest.Start(t, redlocktest.Options{Nodes: 1,
		Config: []string{"replicaof 127.0.0.1 " + strings.Split(master.Addrs()[0], ":")[1]}})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := replica.Node(0).Do(bg, "INFO", "replication")
		seen, _ := master.Node(0).Do(bg, "INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(seen, "state=online") {
			return master, replica
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never synced: %q, %v", info, err)
		}
	}
}

// With WaitReplicas, a grant counts once the replica confirmed it: the lock
// is on the replica when Acquire returns, and an extension too.
func TestWaitReplicas_grantIsOnTheReplicaWhenAcquireReturns(t *testing.T) {
	t.Parallel()
	forEachAdapter(t, func(t *testing.T, a adapter) {
		master, replica := masterWithReplica(t)
		c := newClient(t, master, a, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, WaitReplicas: 1})
		for round := range 5 {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			lock, err := c.Acquire(ctx, "replicated")
			cancel()
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if got := keyOn(t, replica.Node(0), "replicated"); got != lock.Token() {
				t.Fatalf("round %d: the replica holds %q when Acquire returned, want the lock's token", round, got)
			}
			if err := lock.Extend(bg, 10*time.Second); err != nil {
				t.Fatalf("round %d: extend: %v", round, err)
			}
			if ms := do(t, replica.Node(0), "PTTL", "replicated"); len(ms) < 4 {
				t.Fatalf("round %d: the replica's PTTL is %s ms when Extend returned, want about 10 s", round, ms)
			}
			lock.Release(bg)
		}
	})
}

// With WaitReplicas, a master whose replica does not confirm (the link is
// cut) does not count its grant, and the lock is not granted; the attempt
// cleans up after itself. Without it, the grant counts.
func TestWaitReplicas_unconfirmedGrantDoesNotCount(t *testing.T) {
	t.Parallel()
	forEachAdapter(t, func(t *testing.T, a adapter) {
		master, replica := masterWithReplica(t)
		if _, err := replica.Node(0).Do(bg, "REPLICAOF", "NO", "ONE"); err != nil {
			t.Fatal(err)
		}
		// WAIT gets three quarters of the node timeout, and the answer
		// must come within the rest, and within the adapters' 1 s socket
		// timeout: 900 ms leave 225 ms for the script and the reply (500
		// ms, with 125 ms left, timed out once under the race detector
		// with four tests at a time).
		c := newClient(t, master, a, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 900 * time.Millisecond, WaitReplicas: 1})
		_, err := c.TryAcquire(bg, "unconfirmed")
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("acquire with the replica cut off: %v, want ErrNotAcquired", err)
		}
		qe := quorumError(t, err)
		if qe.Nodes[0].Outcome != redlock.OutcomeError || !strings.Contains(qe.Nodes[0].Err.Error(), "WaitReplicas") {
			t.Errorf("node result %v, want an error naming WaitReplicas", qe.Nodes[0])
		}
		if v := eventuallyGone(t, master.Node(0), "unconfirmed"); v != "" {
			t.Errorf("the failed attempt left %q on the master", v)
		}

		plain := newClient(t, master, a, fast())
		lock, err := plain.TryAcquire(bg, "unconfirmed")
		if err != nil {
			t.Fatalf("without WaitReplicas: %v", err)
		}
		lock.Release(bg)
	})
}

// A master that no replica confirms says so within a node timeout shorter
// than the server's tick, where WAIT ends late (at hz 10, up to 100 ms past
// its timeout), and with its script cache empty, where EVALSHA is refused:
// each attempt names WaitReplicas, not a timeout. Before, WAIT's late reply
// made most such attempts time out, and NOSCRIPT made every one of them do
// so, as the script's source never reached the node in time.
func TestWaitReplicas_unconfirmedWithinAShortTimeoutSaysWhy(t *testing.T) {
	t.Parallel()
	for _, a := range withDial() { // goredis.Dial's lone node is asked inline
		t.Run(a.name, func(t *testing.T) { unconfirmedWithinAShortTimeout(t, a) })
	}
}

// unconfirmedWithinAShortTimeout is
// TestWaitReplicas_unconfirmedWithinAShortTimeoutSaysWhy over a.
func unconfirmedWithinAShortTimeout(t *testing.T, a adapter) {
	master, replica := masterWithReplica(t)
	if _, err := replica.Node(0).Do(bg, "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	if _, err := master.Node(0).Do(bg, "SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	c := newClientOrDial(t, master, a, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 100 * time.Millisecond,
		MaxNodeTimeout: 100 * time.Millisecond, WaitReplicas: 1})
	for i := range 3 {
		_, err := c.TryAcquire(bg, "unconfirmed")
		qe := quorumError(t, err)
		if qe.Nodes[0].Outcome != redlock.OutcomeError || !strings.Contains(qe.Nodes[0].Err.Error(), "WaitReplicas") {
			t.Fatalf("attempt %d: node result %v, want an error naming WaitReplicas", i+1, qe.Nodes[0])
		}
	}
}

// A Conn that cannot send WAIT (here one that shows only the methods of
// Conn) is refused with WaitReplicas.
func TestWaitReplicas_needsAReplicatorConn(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	conn := goredisConns(t, cluster.Addrs())[0]
	defer conn.Close()
	plain := struct{ redlock.Conn }{conn}
	_, err := redlock.New([]redlock.Conn{plain}, &redlock.Options{WaitReplicas: 1})
	if !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Fatalf("New with a Conn without WAIT: %v, want ErrInvalidOptions", err)
	}
	if _, err := redlock.New([]redlock.Conn{conn}, &redlock.Options{WaitReplicas: -1}); !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Fatalf("New with WaitReplicas -1: %v, want ErrInvalidOptions", err)
	}
}

// With WaitReplicas, a failover hands the locks over: the promoted replica
// holds every lock its master granted, and refuses another client, even
// with the restart quarantine off.
func TestWaitReplicas_failoverKeepsTheLock(t *testing.T) {
	t.Parallel()
	forEachAdapter(t, func(t *testing.T, a adapter) {
		master, replica := masterWithReplica(t)
		opts := &redlock.Options{TTL: 5 * time.Second, NodeTimeout: 500 * time.Millisecond, WaitReplicas: 1, DisableQuarantine: true}
		c := newClient(t, master, a, opts)
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		held, err := c.Acquire(ctx, "failover")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release(bg)
		if err := master.Node(0).Kill(); err != nil {
			t.Fatal(err)
		}
		if _, err := replica.Node(0).Do(bg, "REPLICAOF", "NO", "ONE"); err != nil {
			t.Fatal(err)
		}
		other, err := redlock.New(a.conns(t, replica.Addrs()), &redlock.Options{TTL: 5 * time.Second, NodeTimeout: 500 * time.Millisecond, DisableQuarantine: true})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if lock, err := other.TryAcquire(bg, "failover"); err == nil {
			lock.Release(bg)
			t.Fatal("the promoted replica granted a lock its master had granted")
		}
	})
}

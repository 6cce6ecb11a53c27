package redlock_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// failoverTTL outlives a Redis Cluster's automatic failover (2 to 3 s with
// redlocktest's cluster-node-timeout of 1 s), so that a lock granted just
// before its master is killed is still valid when the promoted replica
// first answers; the recovery delay is no shorter, as A3 demands. Longer
// makes the tests slower; shorter lets the lock expire during the
// failover, and the tests would no longer show that the quarantine, not
// the TTL, kept the second client out.
const failoverTTL = 5 * time.Second

// sitOutDeadline bounds how long a test waits for a promoted master to
// grant again: its recovery delay, from the first acquisition that reaches
// it, plus a loaded machine's slack.
const sitOutDeadline = 3*failoverTTL + 10*time.Second

// A shard master of a Redis Cluster with a replica dies while a lock in
// its slot is held; the cluster promotes the replica, another process for
// the slot's restart marker. Whether the replica received the lock before
// the master died or not, the promoted master withholds its vote for the
// slot's keys for the recovery delay, so no other client gets the lock
// while it is valid; after the delay the key locks again, with a fencing
// token above every token handed out before the failover.
func TestRedisCluster_promotedReplicaSitsOut(t *testing.T) {
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, ClusterReplicas: 1})
			opts := &redlock.Options{TTL: failoverTTL, NodeTimeout: 500 * time.Millisecond, RecoveryDelay: failoverTTL}
			// The other client has a connection of its own, as another
			// process would; the slots are marked ready once.
			other, err := redlock.New([]redlock.Conn{a.conn(t, cluster.Addrs())}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			f := failover{cluster: cluster, holder: clusterClient(t, cluster, a.conn, opts), other: other}
			t.Run("replicaHadTheLock", func(t *testing.T) { f.run(t, cluster.Node(0), false) })
			t.Run("replicaLackedTheLock", func(t *testing.T) { f.run(t, cluster.Node(1), true) })
		})
	}
}

// failover is a Redis Cluster with one replica per master, and two
// clients of it: holder takes the lock before the failover, other tries
// to take it after.
type failover struct {
	cluster       *redlocktest.Cluster
	holder, other *redlock.Client
}

// run kills master while holder holds a lock of its slot, and checks what
// other gets from the promoted replica. With cut, the replica's link is
// cut before the grant, so the replica never receives it: the replica is
// paused (a paused replica still receives what the master sends, into its
// kernel's socket buffer), its connection closed on the master (it cannot
// reconnect while paused), the lock granted, the master killed and the
// replica resumed. Its replication data then looks fresh to it, so it is
// promoted as usual, without the lock and with an older fencing counter.
func (f failover) run(t *testing.T, master *redlocktest.Node, cut bool) {
	key := keyServedBy(t, f.cluster, master)
	replicas, err := f.cluster.ReplicasOf(bg, master)
	if err != nil || len(replicas) != 1 {
		t.Fatalf("replicas of node %d: %v, %v; want one", master.Index(), replicas, err)
	}
	replica := replicas[0]
	// A first lock leaves a fencing counter, and the slot's restart
	// marker written by the master's process, on the replica too.
	first, err := f.holder.Acquire(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	first.Release(bg)
	waitCaughtUp(t, master, replica)
	if cut {
		cutReplica(t, master, replica)
	}
	held, err := f.holder.Acquire(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	if !cut {
		waitCaughtUp(t, master, replica)
	}
	killed := time.Now()
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	if cut {
		if err := replica.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	promoted, err := f.cluster.WaitPromoted(bg, redlocktest.KeySlot(key), master)
	if err != nil {
		t.Fatal(err)
	}
	if promoted != replica {
		t.Fatalf("node %d promoted, want node %d", promoted.Index(), replica.Index())
	}
	t.Logf("replica promoted %v after the kill; the lock is valid %v more",
		time.Since(killed).Round(time.Millisecond), time.Until(held.Until()).Round(time.Millisecond))
	f.checkPromotedState(t, key, first, held, cut)

	lock := sitOut(t, f.other, key, held)
	defer lock.Release(bg)
	if lock.Fence() <= held.Fence() || held.Fence() <= first.Fence() {
		t.Fatalf("fencing tokens %d, %d (before the failover), then %d after it; want them increasing", first.Fence(), held.Fence(), lock.Fence())
	}
	t.Logf("fencing tokens %d, %d before the failover, %d after it", first.Fence(), held.Fence(), lock.Fence())
}

// checkPromotedState checks what the promoted replica holds for key
// before anyone acquires it there: the restart marker of another process,
// and the held lock with its counter, or, when the link was cut, neither
// the lock nor its counter, only first's.
func (f failover) checkPromotedState(t *testing.T, key string, first, held *redlock.Lock, cut bool) {
	t.Helper()
	var states []redlock.NodeState
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		states, err = f.other.Inspect(bg, key)
		if err == nil && states[0].Err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || states[0].Err != nil {
		t.Fatalf("Inspect after the failover: %+v, %v", states, err)
	}
	s := states[0]
	wantHolder, wantFence := held.Token(), held.Fence()
	if cut {
		wantHolder, wantFence = "", first.Fence()
	}
	if !s.Restarted || !s.Recovering || s.Holder != wantHolder || s.Fence != wantFence {
		t.Fatalf("the promoted replica: %+v; want restarted, recovering, holder %q and fencing counter %d", s, wantHolder, wantFence)
	}
}

// sitOut tries to take key with c until it succeeds, and checks that
// every attempt before held expired was refused, and that the first
// attempt the promoted master answered started its recovery delay, which
// had passed when the key was granted. It returns the lock.
func sitOut(t *testing.T, c *redlock.Client, key string, held *redlock.Lock) *redlock.Lock {
	t.Helper()
	var quarantined time.Time // when the first attempt refused as recovering was sent
	deadline := time.Now().Add(sitOutDeadline)
	for ; time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		sent := time.Now()
		lock, err := c.TryAcquire(bg, key)
		if err == nil {
			checkSatOut(t, time.Now(), quarantined, held)
			return lock
		}
		switch r := quorumError(t, err).Nodes[0]; r.Outcome {
		case redlock.OutcomeRecovering:
			if quarantined.IsZero() {
				quarantined = sent
				t.Logf("first refusal as recovering; the held lock is valid %v more", time.Until(held.Until()).Round(time.Millisecond))
			}
		case redlock.OutcomeError, redlock.OutcomeTimeout, redlock.OutcomeHeld:
			// The client catching up with the new slot map, or the
			// held lock, still valid on the replica that had it.
		default:
			t.Fatalf("acquire after the failover: %v", err)
		}
	}
	t.Fatalf("the key never locked again within %v", sitOutDeadline)
	return nil
}

// checkSatOut checks a grant at granted after a failover: held had
// expired, and the recovery delay, which started no earlier than the
// first refused attempt was sent, had passed.
func checkSatOut(t *testing.T, granted, quarantined time.Time, held *redlock.Lock) {
	t.Helper()
	switch {
	case granted.Before(held.Until()):
		t.Fatalf("granted at %s to another client, while the lock held through the failover is valid until %s",
			granted.Format(time.StampMicro), held.Until().Format(time.StampMicro))
	case quarantined.IsZero():
		t.Fatal("the promoted master granted the lock at once: no recovery delay")
	case granted.Sub(quarantined) < failoverTTL:
		t.Fatalf("granted %v after the recovery delay started, want at least %v", granted.Sub(quarantined), failoverTTL)
	}
}

// keyServedBy returns a key whose slot master was given when the cluster
// formed.
func keyServedBy(t *testing.T, cluster *redlocktest.Cluster, master *redlocktest.Node) string {
	t.Helper()
	for i := range 1000 {
		if key := fmt.Sprintf("job-%d", i); cluster.NodeForKey(key) == master {
			return key
		}
	}
	t.Fatalf("node %d serves none of 1000 keys", master.Index())
	return ""
}

// waitCaughtUp waits until replica has processed all of master's
// replication stream.
func waitCaughtUp(t *testing.T, master, replica *redlocktest.Node) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		want := replicationField(t, master, "master_repl_offset")
		if got := replicationField(t, replica, "slave_repl_offset"); got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d never caught up with node %d", replica.Index(), master.Index())
		}
	}
}

// replicationField returns one field of the node's INFO replication.
func replicationField(t *testing.T, n *redlocktest.Node, field string) string {
	t.Helper()
	for line := range strings.Lines(do(t, n, "INFO", "replication")) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	t.Fatalf("node %d: no %s in INFO replication", n.Index(), field)
	return ""
}

// cutReplica pauses replica and closes its link on master, so that it
// receives none of master's writes until it is resumed.
func cutReplica(t *testing.T, master, replica *redlocktest.Node) {
	t.Helper()
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	if n := do(t, master, "CLIENT", "KILL", "TYPE", "replica"); n != "1" {
		t.Fatalf("CLIENT KILL TYPE replica closed %s links, want 1", n)
	}
}

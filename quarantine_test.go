package redlock_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// coldClient returns a Client over every node of cluster that does not mark
// the nodes ready, as a client of a running deployment would start.
func coldClient(t testing.TB, cluster *redlocktest.Cluster, a adapter, opts *redlock.Options) *redlock.Client {
	t.Helper()
	c, err := redlock.New(a.conns(t, cluster.Addrs()), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitForKey waits until every running node holds value at key: a call
// returns once a quorum answered, and the last nodes follow.
func waitForKey(t testing.TB, cluster *redlocktest.Cluster, key, value string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for _, n := range cluster.Nodes() {
		for n.Running() && keyOn(t, n, key) != value {
			if time.Now().After(deadline) {
				t.Fatalf("node %d: %s = %q, want %q", n.Index(), key, keyOn(t, n, key), value)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestQuarantine_freshNodesRecover(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Unmarked: true})
		opts := &redlock.Options{TTL: time.Second, RecoveryDelay: time.Second, NodeTimeout: 300 * time.Millisecond}
		client := coldClient(t, cluster, a, opts)
		_, err := client.TryAcquire(bg, "fresh")
		// A failure is decided once a quorum cannot be reached: the last
		// node's marker may be written just after the call returned.
		returned := time.Now()
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("nodes without a marker: err = %v, want ErrNotAcquired", err)
		}
		qe := quorumError(t, err)
		if n := countOutcomes(qe)[redlock.OutcomeRecovering]; n < 2 {
			t.Fatalf("%d nodes recovering, want at least 2 of 3: %v", n, err)
		}
		var left time.Duration
		for _, r := range qe.Nodes {
			if r.Outcome != redlock.OutcomeRecovering {
				continue
			}
			if r.RecoveringLeft <= 0 || r.RecoveringLeft > opts.RecoveryDelay {
				t.Errorf("%s: %s left, want in (0, %s]", r.Node, r.RecoveringLeft, opts.RecoveryDelay)
			}
			left = max(left, r.RecoveringLeft)
		}
		if !strings.Contains(err.Error(), "recovering, votes again in 1s") {
			t.Errorf("error does not say the nodes are recovering: %v", err)
		}
		// The last node may answer after the call returned: its marker,
		// written by the script that refused, shows that it did.
		for _, n := range cluster.Nodes() {
			eventually(t, fmt.Sprintf("node %d marked with the time of the first contact", n.Index()), func() bool {
				v := keyOn(t, n, redlock.MarkerKey)
				return v != "" && v != "0"
			})
			if v := keyOn(t, n, "fresh"); v != "" {
				t.Errorf("node %d: a recovering node took the lock: %q", n.Index(), v)
			}
		}
		// Retrying does not restart the quarantine.
		if _, err := client.TryAcquire(bg, "fresh"); err == nil {
			t.Fatal("acquired during the recovery delay")
		}
		time.Sleep(time.Until(returned.Add(left + 50*time.Millisecond)))
		lock, err := client.TryAcquire(bg, "fresh")
		if err != nil {
			t.Fatalf("after the recovery delay: %v", err)
		}
		lock.Release(bg)
	})
}

// TestQuarantine_restartWithoutData is the counter-example of the Redlock
// description: client 1 holds A, B and C; C restarts without its data; client
// 2 asks C, D and E. Without the quarantine both hold the lock at once.
func TestQuarantine_restartWithoutData(t *testing.T) {
	t.Run("quarantine", func(t *testing.T) {
		r := restartUnderHeldLock(t, true)
		wantRestartedNodeRefuses(t, r)
		acquireOnceRecovered(t, r)
	})
	t.Run("noQuarantine", func(t *testing.T) {
		r := restartUnderHeldLock(t, false)
		if r.err != nil {
			t.Fatalf("without the quarantine the restarted node should grant a second lock: %v", r.err)
		}
		defer r.lock2.Release(bg)
		if r.lock1.Err() != nil || r.lock2.Err() != nil || !time.Now().Before(r.lock1.Until()) {
			t.Fatalf("double grant not shown: lock 1 %v, lock 2 %v", r.lock1.Err(), r.lock2.Err())
		}
		t.Logf("two holders at once, as expected without the quarantine: fences %d and %d", r.lock1.Fence(), r.lock2.Fence())
	})
}

// restartedUnderLock is the counter-example once client 2 tried to take the
// lock client 1 holds.
type restartedUnderLock struct {
	cluster *redlocktest.Cluster
	lock1   *redlock.Lock // client 1's lock, on nodes A, B and C
	client2 *redlock.Client
	lock2   *redlock.Lock // client 2's lock, if it was granted
	err     error         // why client 2's lock was not granted
}

// restartUnderHeldLock lets client 1 take the lock on A, B and C, restarts C
// without its data, and lets client 2 try the lock. It fails the test if
// client 1's lock ended before client 2 tried.
func restartUnderHeldLock(t *testing.T, quarantine bool) restartedUnderLock {
	t.Helper()
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	opts := &redlock.Options{TTL: 3 * time.Second, RecoveryDelay: 3 * time.Second,
		NodeTimeout: 300 * time.Millisecond, DisableQuarantine: !quarantine}
	client1 := newClient(t, cluster, adapters[0], opts)
	lock1, err := client1.TryAcquire(bg, "seed")
	if err != nil {
		t.Fatal(err)
	}
	// Client 1 holds A, B, C: its lock never reached D and E.
	waitForKey(t, cluster, "seed", lock1.Token())
	for _, i := range []int{3, 4} {
		if _, err := cluster.Node(i).Do(bg, "DEL", "seed"); err != nil {
			t.Fatal(err)
		}
	}
	// C crashes and restarts empty.
	if err := cluster.Node(2).Restart(bg); err != nil {
		t.Fatal(err)
	}
	client2 := coldClient(t, cluster, adapters[1], opts)
	lock2, err := client2.TryAcquire(bg, "seed")
	if lock1.Err() != nil {
		t.Fatalf("the first lock ended before the second client tried (machine too slow?): %v", lock1.Err())
	}
	return restartedUnderLock{cluster: cluster, lock1: lock1, client2: client2, lock2: lock2, err: err}
}

// wantRestartedNodeRefuses fails the test unless client 2's lock was refused:
// A and B are held by client 1, and C is recovering.
func wantRestartedNodeRefuses(t *testing.T, r restartedUnderLock) {
	t.Helper()
	if r.err == nil {
		r.lock2.Release(bg)
		t.Fatal("double grant: the restarted node voted while the first lock was valid")
	}
	qe := quorumError(t, r.err)
	want := []redlock.Outcome{redlock.OutcomeHeld, redlock.OutcomeHeld, redlock.OutcomeRecovering}
	for i, o := range want {
		if qe.Nodes[i].Outcome != o {
			t.Errorf("node %d: %s, want %s (%v)", i, qe.Nodes[i].Outcome, o, r.err)
		}
	}
	if qe.OK > 2 {
		t.Errorf("granted on %d nodes", qe.OK)
	}
}

// acquireOnceRecovered releases client 1's lock, waits out C's recovery
// delay, and fails the test unless client 2 then takes the lock, with C's
// vote and a greater fencing token.
func acquireOnceRecovered(t *testing.T, r restartedUnderLock) {
	// Once the first lock is gone and the delay has passed, C votes.
	r.lock1.Release(bg)
	time.Sleep(quorumError(t, r.err).Nodes[2].RecoveringLeft + 50*time.Millisecond)
	lock3, err := r.client2.Acquire(bg, "seed", redlock.WithRetry(redlock.LimitAttempts(redlock.DefaultRetry, 5)))
	if err != nil {
		t.Fatalf("after the recovery delay: %v", err)
	}
	defer lock3.Release(bg)
	if lock3.Fence() <= r.lock1.Fence() {
		t.Errorf("fence %d after %d", lock3.Fence(), r.lock1.Fence())
	}
	deadline := time.Now().Add(time.Second)
	for keyOn(t, r.cluster.Node(2), "seed") != lock3.Token() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if keyOn(t, r.cluster.Node(2), "seed") != lock3.Token() {
		t.Error("the restarted node did not vote after its recovery delay")
	}
}

// A node that restarts is another process, whatever it reloaded: with
// appendfsync always it keeps its locks and its marker, and it still sits out
// the recovery delay, since the same holds of a snapshot or an AOF that lost
// the last writes (see TestQuarantine_restartFromSnapshot).
func TestQuarantine_restartWithAOFSitsOut(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5, AppendFsyncAlways: true})
	client := newClient(t, cluster, adapters[0], fast())
	// Held well past the restart: the AOF keeps the key's deadline.
	held, err := client.TryAcquire(bg, "durable", redlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)
	// TryAcquire returns at a quorum: make sure node 2 has written the lock
	// before it is killed.
	for deadline := time.Now().Add(time.Second); keyOn(t, cluster.Node(2), "durable") != held.Token() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := cluster.Node(2).Restart(bg); err != nil {
		t.Fatal(err)
	}
	states, err := client.Inspect(bg, "durable")
	if err != nil {
		t.Fatal(err)
	}
	if s := states[2]; s.Err != nil || !s.Restarted || !s.Recovering || s.NoMarker || s.Holder != held.Token() {
		t.Fatalf("restarted node with appendfsync always: %+v, want the lock kept, restarted and recovering", s)
	}
	lock := tryAcquireEventually(t, client, "durable-2")
	defer lock.Release(bg)
	if o := lock.Nodes()[2].Outcome; o != redlock.OutcomeRecovering && o != redlock.OutcomeNoAnswer {
		t.Errorf("restarted node answered %s, want recovering", o)
	}
	if v := keyOn(t, cluster.Node(2), "durable-2"); v != "" {
		t.Errorf("the restarted node granted the lock (%q) within its recovery delay", v)
	}
}

// tryAcquireEventually makes attempts for up to a second: a node that
// restarted may refuse the first connection.
func tryAcquireEventually(t *testing.T, client *redlock.Client, key string) *redlock.Lock {
	t.Helper()
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		lock, err := client.TryAcquire(bg, key)
		if err == nil {
			return lock
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

// MarkReady marks a brand-new deployment, whose nodes have no marker or sit
// out their recovery delay; it marks no node while one cannot be read, or
// while one is ready beside recovering ones.
func TestMarkReady(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 4, Unmarked: true})
	opts := fast()
	client := coldClient(t, cluster, adapters[1], opts)
	// Node 0 never saw a client; node 1 is recovering; node 3 is down.
	recovering := strconv.FormatInt(time.Now().UnixMicro(), 10)
	if _, err := cluster.Node(1).Do(bg, "SET", redlock.MarkerKey, recovering); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Node(3).Kill(); err != nil {
		t.Fatal(err)
	}
	wantMarkers := func(when string, want ...string) {
		t.Helper()
		for i, w := range want {
			if got := keyOn(t, cluster.Node(i), redlock.MarkerKey); got != w {
				t.Errorf("%s: node %d: marker %q, want %q", when, i, got, w)
			}
		}
	}
	err := client.MarkReady(bg, false)
	if !errors.Is(err, redlock.ErrNotMarkedReady) || !strings.Contains(err.Error(), cluster.Node(3).Addr()) {
		t.Fatalf("one node down: err = %v, want ErrNotMarkedReady naming it", err)
	}
	wantMarkers("one node down", "", recovering, "")
	if err := cluster.Node(3).Start(bg); err != nil {
		t.Fatal(err)
	}
	// Node 2 has been ready for long (an old stamp).
	if _, err := cluster.Node(2).Do(bg, "SET", redlock.MarkerKey, "1"); err != nil {
		t.Fatal(err)
	}
	// The connection to the restarted node may fail once before the client
	// reconnects; an operator runs the step again.
	markReady := func() error {
		for try := 1; ; try++ {
			err := client.MarkReady(bg, false)
			if try == 3 || !errors.Is(err, redlock.ErrNotMarkedReady) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	err = markReady()
	if !errors.Is(err, redlock.ErrNotBrandNew) || !strings.Contains(err.Error(), cluster.Node(2).Addr()+" ready but "+cluster.Node(0).Addr()) {
		t.Fatalf("one node ready, the others not: err = %v, want ErrNotBrandNew naming them", err)
	}
	wantMarkers("one node ready", "", recovering, "1", "")
	if _, err := cluster.Node(2).Do(bg, "DEL", redlock.MarkerKey); err != nil {
		t.Fatal(err)
	}
	if err := markReady(); err != nil {
		t.Fatalf("no node ready: %v", err)
	}
	wantMarkers("marked", "0", "0", "0", "0")
	lock, err := client.TryAcquire(bg, "ready")
	if err != nil {
		t.Fatalf("after MarkReady: %v", err)
	}
	lock.Release(bg)
}

func TestQuarantine_ttlAboveRecoveryDelay(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	conns := func() []redlock.Conn { return goredisConns(t, cluster.Addrs()) }

	// The defaults: 30 s covers TTLs up to 30 s. The error names both ways
	// out: renew a shorter TTL, or raise the delay on every client at once.
	_, err := redlock.New(conns(), &redlock.Options{TTL: 31 * time.Second})
	if !errors.Is(err, redlock.ErrInvalidTTL) {
		t.Errorf("TTL 31 s with the default recovery delay: %v", err)
	}
	wantTTLWayOut(t, err, "31s")
	if _, err := redlock.New(conns(), &redlock.Options{TTL: 31 * time.Second, DisableQuarantine: true}); err != nil {
		t.Errorf("TTL 31 s without the quarantine: %v", err)
	}
	if _, err := redlock.New(conns(), &redlock.Options{RecoveryDelay: -time.Second}); !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Errorf("negative recovery delay: %v", err)
	}

	opts := &redlock.Options{TTL: time.Second, RecoveryDelay: 2 * time.Second, NodeTimeout: 300 * time.Millisecond}
	client := newClient(t, cluster, adapters[0], opts)
	if got := client.Options().RecoveryDelay; got != 2*time.Second {
		t.Errorf("Options().RecoveryDelay = %s", got)
	}
	if _, err := client.TryAcquire(bg, "long", redlock.WithTTL(3*time.Second)); !errors.Is(err, redlock.ErrInvalidTTL) {
		t.Errorf("acquire with TTL above the recovery delay: %v", err)
	}
	for _, n := range cluster.Nodes() {
		if v := keyOn(t, n, "long"); v != "" {
			t.Errorf("node %d: a rejected acquisition left the key", n.Index())
		}
	}
	lock, err := client.TryAcquire(bg, "long", redlock.WithTTL(2*time.Second))
	if err != nil {
		t.Fatalf("TTL equal to the recovery delay: %v", err)
	}
	defer lock.Release(bg)
	err = lock.Extend(bg, 3*time.Second)
	if !errors.Is(err, redlock.ErrInvalidTTL) {
		t.Errorf("extend above the recovery delay: %v", err)
	}
	wantTTLWayOut(t, err, "3s")
	if _, err := client.ExtendToken(bg, "long", lock.Token(), 3*time.Second); !errors.Is(err, redlock.ErrInvalidTTL) {
		t.Errorf("ExtendToken above the recovery delay: %v", err)
	}
	if err := lock.Extend(bg, 2*time.Second); err != nil {
		t.Errorf("extend to the recovery delay: %v", err)
	}
}

// wantTTLWayOut fails the test unless err, the refusal of a TTL above the
// recovery delay, says how to do long work all the same: renew a TTL
// within the delay, or raise the delay to at least ttl on every client.
func wantTTLWayOut(t *testing.T, err error, ttl string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, want := range []string{"recovery delay", "WithAutoRenew", "Do", "raise Options.RecoveryDelay to at least " + ttl,
		"on every client of these nodes together"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal of a TTL above the recovery delay lacks %q: %v", want, err)
		}
	}
}

// A node that answers a mark-ready request too late is asked again, so that
// MarkReady reports what happened rather than a timeout on a node whose
// marker it did set.
func TestMarkReady_lateAnswerIsAskedAgain(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := coldClient(t, cluster, adapters[0], fast())
	if err := cluster.Node(1).Pause(); err != nil {
		t.Fatal(err)
	}
	// Over go-redis, the first request times out after the connection's
	// one-second read timeout; the node wakes up during the second one.
	resumed := time.AfterFunc(1500*time.Millisecond, func() { cluster.Node(1).Resume() })
	defer resumed.Stop()
	if err := client.MarkReady(bg, false); err != nil {
		t.Fatalf("node 1 answering after the first timeout: %v", err)
	}
	for _, n := range cluster.Nodes() {
		if got := keyOn(t, n, redlock.MarkerKey); got != "0" {
			t.Errorf("node %d: marker %q, want 0", n.Index(), got)
		}
	}
}

// A node that voted before is judged again whenever its marker or the
// marker's writer changed: the function library remembers that a marker was
// old enough, and nothing more. A flush, a marker written by another
// process, and a client with a longer recovery delay each see the node
// recovering.
func TestQuarantine_aNodeThatVotedIsJudgedAgainOnChange(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		node := cluster.Node(0)
		opts := &redlock.Options{TTL: time.Second, RecoveryDelay: time.Second, NodeTimeout: 300 * time.Millisecond}
		client := newClient(t, cluster, a, opts)
		takeAndRelease := func(what string) error {
			t.Helper()
			lock, err := client.TryAcquire(bg, "judged")
			if err == nil {
				err = lock.Release(bg)
			}
			return err
		}
		wantRecovering := func(what string, c *redlock.Client, atLeast time.Duration) {
			t.Helper()
			_, err := c.TryAcquire(bg, "judged")
			if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("%s: err = %v, want the node recovering", what, err)
			}
			r := quorumError(t, err).Nodes[0]
			if r.Outcome != redlock.OutcomeRecovering || r.RecoveringLeft < atLeast {
				t.Fatalf("%s: outcome %v, %s left, want recovering for at least %s", what, r.Outcome, r.RecoveringLeft, atLeast)
			}
		}
		if err := takeAndRelease("ready node"); err != nil {
			t.Fatalf("ready node: %v", err)
		}

		if _, err := node.Do(bg, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		wantRecovering("after FLUSHALL", client, opts.RecoveryDelay/2)
		deadline := time.Now().Add(5 * time.Second)
		for err := takeAndRelease("after the quarantine"); err != nil; err = takeAndRelease("after the quarantine") {
			if time.Now().After(deadline) {
				t.Fatalf("the node never voted again after its quarantine: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}

		longer := *opts
		longer.TTL, longer.RecoveryDelay = time.Second, time.Minute
		wantRecovering("a client with a longer recovery delay", coldClient(t, cluster, a, &longer), 50*time.Second)

		if _, err := node.Do(bg, "SET", redlock.ProcessKey, strings.Repeat("f", 40)); err != nil {
			t.Fatal(err)
		}
		wantRecovering("a marker another process wrote", client, opts.RecoveryDelay/2)
	})
}

// A Client that its nodes granted a lock knows they were ready then: once
// they all lost their data (restarted without persistence), they look
// brand new, and its MarkReady refuses them unless forced, naming them,
// while that lock may still be held.
func TestMarkReady_nodesThatGrantedThisClientAreNotBrandNew(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], fast())
	if _, err := c.Acquire(bg, "held"); err != nil {
		t.Fatal(err)
	}
	for _, n := range cluster.Nodes() {
		if err := n.Restart(bg); err != nil {
			t.Fatal(err)
		}
	}
	err := c.MarkReady(bg, false)
	// Acquire returned at a quorum: the nodes it heard from in time are
	// those it knows granted the lock.
	named := 0
	for _, n := range cluster.Nodes() {
		if err != nil && strings.Contains(err.Error(), n.Addr()+" (which granted this client's locks)") {
			named++
		}
	}
	if !errors.Is(err, redlock.ErrNotBrandNew) || named < 2 {
		t.Fatalf("MarkReady after every node that granted a lock lost its data: %v, want ErrNotBrandNew naming at least a majority of them", err)
	}
	if err := c.MarkReady(bg, true); err != nil {
		t.Fatalf("forced: %v", err)
	}
}

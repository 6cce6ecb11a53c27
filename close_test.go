package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// closeBound is how long a call waiting for a lock may take to return once
// its Client closed: Close waits up to four per-node timeouts, and the
// calls then return at once. Far above that, so that only a call that
// would wait on can miss it.
const closeBound = 10 * time.Second

// Close ends the calls waiting for a lock and the observers of the Client,
// with ErrClosed, however long their contexts would let them wait; on one
// node (sent from the caller's goroutine) and on three.
func TestClose_endsWaitingCalls(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) { closeEndsWaitingCalls(t, n) })
	}
}

func closeEndsWaitingCalls(t *testing.T, n int) {
	{
		forEachAdapter(t, func(t *testing.T, a adapter) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: n})
			// The holder keeps its locks for as long as the test runs.
			holder := newClient(t, cluster, a, &redlock.Options{TTL: 30 * time.Second, NodeTimeout: fast().NodeTimeout})
			held := []*redlock.Lock{}
			for _, name := range []string{"busy", "busy-b", "sem", "leader"} {
				opts := []redlock.LockOption{}
				if name == "sem" {
					opts = append(opts, redlock.WithLimit(1))
				}
				lock, err := holder.Acquire(bg, name, opts...)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, lock)
			}
			defer func() {
				for _, l := range held {
					l.Release(bg)
				}
			}()

			c := newClient(t, cluster, a, fast())
			election, err := c.NewElection("leader")
			if err != nil {
				t.Fatal(err)
			}
			observer := election.Observe(bg)
			if _, ok := <-observer; !ok {
				t.Fatal("Observe closed its channel before Close")
			}
			waiting := map[string]func() error{
				"Acquire":     func() error { _, err := c.Acquire(bg, "busy"); return err },
				"AcquireAll":  func() error { _, err := c.AcquireAll(bg, []string{"free", "busy-b"}); return err },
				"WithLimit":   func() error { _, err := c.Acquire(bg, "sem", redlock.WithLimit(1)); return err },
				"Campaign":    func() error { return election.Campaign(bg, "me") },
				"Do":          func() error { return c.Do(bg, "busy", func(context.Context) error { return nil }) },
				"WithShared":  func() error { _, err := c.Acquire(bg, "busy", redlock.WithShared()); return err },
				"TryAcquire*": func() error { return tryUntilClosed(c, "busy") },
			}
			errs := make(map[string]chan error, len(waiting))
			for call, f := range waiting {
				ch := make(chan error, 1)
				errs[call] = ch
				go func() { ch <- f() }()
			}
			// The calls that queue for a key are waiting once the nodes
			// queued them: their attempts failed, and Close meets them
			// between two.
			for _, key := range []string{"busy", "busy-b", "leader"} {
				awaitQueued(t, cluster, key)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			timeout := time.After(closeBound)
			for call, ch := range errs {
				select {
				case err := <-ch:
					if !errors.Is(err, redlock.ErrClosed) {
						t.Errorf("%s waiting at Close returned %v, want ErrClosed", call, err)
					}
				case <-timeout:
					t.Errorf("%s still waiting %v after Close", call, closeBound)
					timeout = closedChan // the others are as late
				}
			}
			select {
			case l, ok := <-observer:
				for ok {
					l, ok = <-observer // a change seen just before Close
				}
				_ = l
			case <-timeout:
				t.Errorf("Observe's channel still open %v after Close", closeBound)
			}
		})
	}
}

// closedChan is a closed channel, ready at once.
var closedChan = func() <-chan time.Time {
	ch := make(chan time.Time)
	close(ch)
	return ch
}()

// tryUntilClosed loops on TryAcquire, as a caller that polls does, and
// returns the first error that is not the key being held.
func tryUntilClosed(c *redlock.Client, key string) error {
	for {
		_, err := c.TryAcquire(bg, key)
		if !errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, redlock.ErrClosed) {
			return err
		}
	}
}

// Every call made after Close fails at once with ErrClosed and sends
// nothing: a release too, which fails unsent (ErrNotReleased as well) and
// leaves the lock to its TTL, and a candidate that leads; on one node
// (asked from the caller's goroutine) and on three.
func TestClose_laterCallsFailAtOnce(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			for _, a := range append(withDial(), rueidisUnowned) {
				t.Run(a.name, func(t *testing.T) { closeLaterCallsFail(t, a, n) })
			}
		})
	}
}

// rueidisUnowned makes Conns by rueidis.New, over rueidis clients that the
// test, not the Client, closes at its end: open after the Client's Close.
var rueidisUnowned = adapter{"rueidis.New", func(t testing.TB, addrs []string) []redlock.Conn {
	conns := rueidisConns(t, addrs)
	for i, conn := range conns {
		client := conn.(*rueidis.Conn).Client()
		t.Cleanup(client.Close)
		conns[i] = rueidis.New(client)
	}
	return conns
}}

func closeLaterCallsFail(t *testing.T, a adapter, n int) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: n})
	c := newClientOrDial(t, cluster, a, fast())
	// Longer than the test: the check that a Release after Close leaves
	// the lock on the nodes must not meet its expiry (fast's TTL is 2 s).
	lock, err := c.Acquire(bg, "k", redlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	election, err := c.NewElection("svc")
	if err != nil {
		t.Fatal(err)
	}
	if err := election.Campaign(bg, "me"); err != nil {
		t.Fatal(err)
	}
	// Both returned at a quorum: the requests still in flight land before
	// Close, which waits for them only so long, so that none is counted
	// below as sent after it. A request that a busy host dropped unsent
	// (it waited past the node timeout) never lands: a majority suffices.
	holding := settledHolders(t, cluster, "k", lock.Token())
	lead := election.Lock()
	settledHolders(t, cluster, lead.Key(), lead.Token())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	sent := make([]int, n)
	for i, node := range cluster.Nodes() {
		sent[i] = scriptCallsOn(t, node)
	}
	for call, f := range map[string]func() error{
		"Acquire":       func() error { _, err := c.Acquire(bg, "k2"); return err },
		"TryAcquire":    func() error { _, err := c.TryAcquire(bg, "k2"); return err },
		"AcquireAll":    func() error { _, err := c.AcquireAll(bg, []string{"k2", "k3"}); return err },
		"TryAcquireAll": func() error { _, err := c.TryAcquireAll(bg, []string{"k2", "k3"}); return err },
		"Do":            func() error { return c.Do(bg, "k2", func(context.Context) error { return nil }) },
		"Lock.Extend":   func() error { return lock.Extend(bg, 0) },
		"ExtendToken":   func() error { _, err := c.ExtendToken(bg, "k", lock.Token(), 0); return err },
		"Check":         func() error { _, err := c.Check(bg, "k", lock.Token()); return err },
		"Inspect":       func() error { _, err := c.Inspect(bg, "k"); return err },
		"List":          func() error { _, err := c.List(bg, ""); return err },
		"ForceRelease":  func() error { _, err := c.ForceRelease(bg, "k", "ops"); return err },
		"MarkReady":     func() error { return c.MarkReady(bg, false) },
		"Campaign":      func() error { return election.Campaign(bg, "me") },
		"Leader":        func() error { _, err := election.Leader(bg); return err },
		"NewElection":   func() error { _, err := c.NewElection("svc2"); return err },
		"Release":       func() error { return lock.Release(bg) },
		"ReleaseToken":  func() error { return c.ReleaseToken(bg, "k", lock.Token()) },
	} {
		err := f()
		if !errors.Is(err, redlock.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", call, err)
		}
		if strings.HasPrefix(call, "Release") && !errors.Is(err, redlock.ErrNotReleased) {
			t.Errorf("%s after Close = %v, want ErrNotReleased too", call, err)
		}
	}
	if _, ok := <-election.Observe(bg); ok {
		t.Error("Observe after Close sent a leader")
	}
	for i, node := range cluster.Nodes() {
		if now := scriptCallsOn(t, node); now != sent[i] {
			t.Errorf("node %d ran %d script calls after Close", i, now-sent[i])
		}
		if v := keyOn(t, node, "k"); holding[i] && v != lock.Token() {
			t.Errorf("node %d holds %q after a Release after Close, want the lock's token still", i, v)
		}
	}
}

// settledHolders waits up to 2 s for key to hold value on every node, and
// returns which nodes do then; it fails the test unless a majority does.
func settledHolders(t *testing.T, cluster *redlocktest.Cluster, key, value string) []bool {
	t.Helper()
	nodes := cluster.Nodes()
	holds := make([]bool, len(nodes))
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := 0
		for i, node := range nodes {
			if holds[i] = keyOn(t, node, key) == value; holds[i] {
				n++
			}
		}
		if n == len(nodes) || time.Now().After(deadline) {
			if n <= len(nodes)/2 {
				t.Fatalf("%s holds %q on %d of %d nodes, want a majority", key, value, n, len(nodes))
			}
			return holds
		}
	}
}

// A goroutine queued behind another of its Client for a key's turn gets
// the turn when Close ends the other's wait, and returns ErrClosed too,
// without an attempt: even while Close still waits for a silent node's
// requests, and the key has come free. Both errors wrap ErrNotAcquired, as
// every failed Acquire's does, wherever the call was in line (the second
// was a bare ErrClosed before).
func TestClose_queuedGoroutineMakesNoAttempt(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		opts := fast()
		opts.Retry = redlock.ExponentialJitter(time.Minute, time.Minute)
		c := newClient(t, cluster, a, opts)
		// Held by another client for a second, then free: it expires
		// unreleased, which wakes nobody.
		for _, n := range cluster.Nodes() {
			if _, err := n.Do(bg, "SET", "k", "foreign", "PX", "1000"); err != nil {
				t.Fatal(err)
			}
		}
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { _, err := c.Acquire(bg, "k"); first <- err }()
		awaitQueued(t, cluster, "k")
		go func() {
			lock, err := c.Acquire(bg, "k")
			if lock != nil {
				err = fmt.Errorf("granted %s after Close", lock.Token())
			}
			second <- err
		}()
		for deadline := time.Now().Add(closeBound); c.TurnQueued("k") == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the second goroutine never queued for the turn")
			}
		}
		for _, n := range cluster.Nodes() {
			awaitCleared(t, n, "k", closeBound)
		}
		// Node 2 falls silent with a request of this client's under way
		// there, which Close waits for.
		if err := cluster.Node(2).Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resumeAll(t, cluster) })
		if _, err := c.TryAcquire(bg, "other"); err != nil {
			t.Fatal(err) // granted by nodes 0 and 1; node 2 still has it
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		for name, ch := range map[string]chan error{"first": first, "second": second} {
			select {
			case err := <-ch:
				if !errors.Is(err, redlock.ErrClosed) || !errors.Is(err, redlock.ErrNotAcquired) {
					t.Errorf("the %s waiter returned %v, want ErrClosed and ErrNotAcquired", name, err)
				}
			case <-time.After(closeBound):
				t.Errorf("the %s waiter still waits %v after Close", name, closeBound)
			}
		}
		for i := range 2 {
			if v := keyOn(t, cluster.Node(i), "k"); v != "" {
				t.Errorf("node %d holds k for %q after Close", i, v)
			}
		}
	})
}

// A renewed lock, and an election's lead, end at their deadline once their
// Client closed, with an error that says so: ErrLockLost wrapping
// ErrClosed, which tells a program's own shutdown from a loss.
func TestClose_renewedLockEndsWithErrClosed(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], fast())
	lock, err := c.Acquire(bg, "k", redlock.WithAutoRenew())
	if err != nil {
		t.Fatal(err)
	}
	election, err := c.NewElection("svc")
	if err != nil {
		t.Fatal(err)
	}
	if err := election.Campaign(bg, "me"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for name, end := range map[string]struct {
		done <-chan struct{}
		err  func() error
	}{"lock": {lock.Done(), lock.Err}, "lead": {election.Done(), election.Err}} {
		select {
		case <-end.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not end within 10 s of Close (TTL 2 s)", name)
		}
		err := end.err()
		if !errors.Is(err, redlock.ErrLockLost) || !errors.Is(err, redlock.ErrClosed) {
			t.Errorf("%s ended with %v, want ErrLockLost and ErrClosed", name, err)
		}
	}
}

// A call that Close ends while it waits takes its place out of the queues
// it waited in before the connections close: the next in line is not kept
// waiting until the place lapses (QueueLasts), as it would be behind a
// client that crashed. An election's candidate, a mutex's waiter, a set's,
// a semaphore's and a reader, on three nodes.
func TestClose_waitingCallsLeaveTheirQueues(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, &redlock.Options{TTL: 30 * time.Second, NodeTimeout: fast().NodeTimeout})
		for _, name := range []string{"busy", "busy-b", "sem", "leader"} {
			var opts []redlock.LockOption
			if name == "sem" {
				opts = append(opts, redlock.WithLimit(1))
			}
			lock, err := holder.Acquire(bg, name, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Release(bg)
		}
		// A node timeout far above a loopback round trip: the leaves
		// that Close waits for are answered within it however busy the
		// machine.
		c := newClient(t, cluster, a, &redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second})
		election, err := c.NewElection("leader")
		if err != nil {
			t.Fatal(err)
		}
		waiting := []func() error{
			func() error { _, err := c.Acquire(bg, "busy"); return err },
			func() error { _, err := c.Acquire(bg, "busy", redlock.WithShared()); return err },
			func() error { _, err := c.AcquireAll(bg, []string{"free", "busy-b"}); return err },
			func() error { _, err := c.Acquire(bg, "sem", redlock.WithLimit(1)); return err },
			func() error { return election.Campaign(bg, "me") },
		}
		errs := make(chan error, len(waiting))
		for _, f := range waiting {
			go func() { errs <- f() }()
		}
		queued := []string{"busy", "busy-b", redlock.PermitKey("sem", 1), "leader"}
		// The reader and the writer of "busy" each have an entry.
		awaitEntries(t, cluster, c.ID(), queued, len(queued)+1)
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		left := 0
		for _, n := range cluster.Nodes() {
			if entries := entriesOf(t, n, c.ID(), queued); entries == 0 {
				left++
			} else {
				t.Logf("node %d still queues the closed client %d times", n.Index(), entries)
			}
		}
		if left < 2 {
			t.Errorf("the closed client's calls left the queues on %d nodes of 3, want a quorum", left)
		}
		for range waiting {
			if err := <-errs; !errors.Is(err, redlock.ErrClosed) {
				t.Errorf("a call waiting at Close returned %v, want ErrClosed", err)
			}
		}
	})
}

// awaitEntries waits until a quorum of cluster's nodes each queue client id
// want times in the queues of keys (its readers' entries count).
func awaitEntries(t *testing.T, cluster *redlocktest.Cluster, id string, keys []string, want int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := 0
		for _, node := range cluster.Nodes() {
			if entriesOf(t, node, id, keys) >= want {
				n++
			}
		}
		if n >= len(cluster.Nodes())/2+1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %s not queued %d times on a quorum of nodes", id, want)
		}
	}
}

// entriesOf counts the entries of client id in the queues of keys on node.
func entriesOf(t *testing.T, node *redlocktest.Node, id string, keys []string) int {
	t.Helper()
	n := 0
	for _, key := range keys {
		queue, _ := redlock.QueueKeys(key)
		v, err := node.Do(bg, "ZRANGE", queue, "0", "-1")
		if err != nil {
			t.Fatal(err)
		}
		for _, entry := range strings.Fields(v) {
			if strings.HasPrefix(entry, id) {
				n++
			}
		}
	}
	return n
}

// An attempt that wins as Close begins does not hand its caller a lock it
// could neither renew nor release, which the nodes would keep until its
// TTL: the call releases it, and returns ErrClosed.
func TestClose_lockWonAsItClosesIsReleased(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		// Node timeouts far above the pause below: the attempt waits for
		// the paused nodes.
		c := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 5 * time.Second})
		slow := cluster.Nodes()[:2]
		for _, n := range slow {
			if err := n.Pause(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Resume() })
		}
		type result struct {
			lock *redlock.Lock
			err  error
		}
		won := make(chan result, 1)
		go func() {
			l, err := c.TryAcquire(bg, "k")
			won <- result{l, err}
		}()
		// The attempt is under way: the node that answers granted it.
		eventually(t, "the attempt reached the node that answers", func() bool { return keyOn(t, cluster.Node(2), "k") != "" })
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		eventually(t, "Close began", c.Closing)
		for _, n := range slow {
			if err := n.Resume(); err != nil {
				t.Fatal(err)
			}
		}
		r := <-won
		if !errors.Is(r.err, redlock.ErrClosed) || r.lock != nil {
			t.Fatalf("an attempt won as Close began returned a lock: %t, error %v; want no lock and ErrClosed", r.lock != nil, r.err)
		}
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		held := 0
		for _, n := range cluster.Nodes() {
			if keyOn(t, n, "k") != "" {
				held++
			}
		}
		if held >= 2 {
			t.Errorf("the lock won as Close began still stands on %d nodes of 3", held)
		}
	})
}

package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Bad names and options fail NewElection as they fail a lock.
func TestNewElection_badInput(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], fast())
	if _, err := c.NewElection(""); !errors.Is(err, redlock.ErrInvalidKey) {
		t.Errorf("empty name: %v, want ErrInvalidKey", err)
	}
	if _, err := c.NewElection("svc", redlock.WithLimit(2)); !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Errorf("WithLimit: %v, want ErrInvalidOptions", err)
	}
	if _, err := c.NewElection("svc", redlock.WithShared()); !errors.Is(err, redlock.ErrInvalidOptions) {
		t.Errorf("WithShared: %v, want ErrInvalidOptions", err)
	}
	// The leader's owner is its Campaign value.
	for _, owner := range []string{"host-a", ""} {
		if _, err := c.NewElection("svc", redlock.WithOwner(owner)); !errors.Is(err, redlock.ErrInvalidOptions) {
			t.Errorf("WithOwner(%q): %v, want ErrInvalidOptions", owner, err)
		}
	}
	if _, err := c.NewElection("svc", redlock.WithLockDelay(-time.Second)); !errors.Is(err, redlock.ErrInvalidLockDelay) {
		t.Errorf("negative lock-delay: %v, want ErrInvalidLockDelay", err)
	}
	e, err := c.NewElection("svc")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Campaign(bg, "host a"); !errors.Is(err, redlock.ErrInvalidOwner) {
		t.Errorf("a value with a space: %v, want ErrInvalidOwner", err)
	}
	if _, err := e.Leader(bg); !errors.Is(err, redlock.ErrNoLeader) {
		t.Errorf("Leader of an empty election: %v, want ErrNoLeader", err)
	}
	if !errors.Is(e.Err(), redlock.ErrNoLeader) || e.Term() != 0 || e.Lock() != nil {
		t.Errorf("a candidate never elected: Err %v, Term %d", e.Err(), e.Term())
	}
	select {
	case <-e.Done():
	default:
		t.Error("Done of a candidate never elected is open")
	}
	if err := e.Resign(bg); err != nil {
		t.Errorf("Resign without the lead: %v", err)
	}
}

// One candidate leads while another campaigns; the second is elected once
// the first resigns, with a greater term; an observer sees the vacancy,
// then each leader in order; Leader reads the current one.
func TestElection_campaignResignObserve(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		first := election(t, newClient(t, cluster, a, fast()), "svc")
		second := election(t, newClient(t, cluster, a, fast()), "svc")
		watcher := election(t, newClient(t, cluster, a, fast()), "svc")
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		changes := watcher.Observe(ctx)
		if l := <-changes; !l.Vacant() {
			t.Fatalf("first observation %+v, want a vacancy", l)
		}

		if err := first.Campaign(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if err := first.Campaign(ctx, "a"); err != nil {
			t.Fatalf("campaign while leading: %v", err)
		}
		expectObserved(t, changes, first, "a")
		if l, err := first.Leader(ctx); err != nil || l.Value != "a" || l.Term != first.Term() || l.Since.IsZero() {
			t.Errorf("the leader reads %+v, %v; want itself, value \"a\"", l, err)
		}
		handOver(t, ctx, cluster, first, second, "b")
		expectObserved(t, changes, second, "b")
		l, err := watcher.Leader(ctx)
		if err != nil || l.Token != second.Lock().Token() || l.Term != second.Term() {
			t.Errorf("Leader %+v, %v; want the second leader", l, err)
		}
		if err := second.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if l := <-changes; !l.Vacant() {
			t.Errorf("observed %+v after the last resignation, want a vacancy", l)
		}
	})
}

// expectObserved reads changes up to the next leader, past a vacancy if
// one was read, and fails the test unless it is e's lead with value.
func expectObserved(t *testing.T, changes <-chan redlock.Leader, e *redlock.Election, value string) {
	t.Helper()
	for l := range changes {
		if l.Vacant() {
			continue // the moment between two leaders, if read
		}
		if l.Token != e.Lock().Token() || l.Term != e.Term() || l.Value != value || l.Since.IsZero() {
			t.Fatalf("observed %+v, want %q leading with term %d", l, value, e.Term())
		}
		return
	}
	t.Fatal("Observe ended")
}

// handOver makes next campaign with value behind the leader first, then
// first resign, and checks that next was elected with a greater term.
func handOver(t *testing.T, ctx context.Context, cluster *redlocktest.Cluster, first, next *redlock.Election, value string) {
	t.Helper()
	elected := make(chan error, 1)
	go func() { elected <- next.Campaign(ctx, value) }()
	awaitQueued(t, cluster, "svc")
	term := first.Term()
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-elected; err != nil {
		t.Fatal(err)
	}
	if first.Err() == nil || first.Term() != term {
		t.Errorf("after Resign the first candidate has Err %v, term %d; want an error, its term %d", first.Err(), first.Term(), term)
	}
	if next.Term() <= first.Term() {
		t.Errorf("next term %d not above the first's %d", next.Term(), first.Term())
	}
}

// A leader whose client loses every node, as a killed process does,
// without resigning learns that it lost the lead before the next candidate
// is elected, once its lock's TTL has passed on the nodes.
func TestElection_deadLeaderIsFollowedOnceItsLeadEnded(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		const ttl = 600 * time.Millisecond
		dying, die := severableClient(t, cluster, a, fast())
		first := election(t, dying, "svc", redlock.WithTTL(ttl))
		next := election(t, newClient(t, cluster, a, fast()), "svc", redlock.WithTTL(ttl))
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		start := time.Now()
		if err := first.Campaign(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		die() // stops renewing; never resigns
		if err := next.Campaign(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		defer next.Resign(bg) // before the client closes: no renewal may run after Close
		if !errors.Is(first.Err(), redlock.ErrLockLost) {
			t.Errorf("the dead leader's Err is %v when the next is elected, want ErrLockLost", first.Err())
		}
		if took := time.Since(start); took < ttl-2*time.Millisecond {
			t.Errorf("next elected %s after the first campaigned, within its %s TTL", took, ttl)
		}
		if next.Term() <= first.Term() {
			t.Errorf("next term %d not above %d", next.Term(), first.Term())
		}
	})
}

// severableConn is a node's Conn whose requests fail at once once its
// client is severed from the nodes, as those of a dead process never
// arrive.
type severableConn struct {
	redlock.Conn
	severed *atomic.Bool
}

// errSevered is the error of a request of a severed client.
var errSevered = errors.New("severed from the nodes")

func (c severableConn) Do(ctx context.Context, args ...string) (any, error) {
	if c.severed.Load() {
		return nil, errSevered
	}
	return c.Conn.Do(ctx, args...)
}

func (c severableConn) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	if c.severed.Load() {
		return nil, errSevered
	}
	return c.Conn.EvalSHA(ctx, sha1, source, keys, args...)
}

// severableClient returns a Client over every node of cluster, as
// newClient does, and the function that severs it from every node.
func severableClient(t testing.TB, cluster *redlocktest.Cluster, a adapter, opts *redlock.Options) (*redlock.Client, func()) {
	t.Helper()
	severed := new(atomic.Bool)
	var conns []redlock.Conn
	for _, c := range a.conns(t, cluster.Addrs()) {
		conns = append(conns, severableConn{Conn: c, severed: severed})
	}
	c, err := redlock.New(conns, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.MarkReady(bg, false); err != nil {
		t.Fatal(err)
	}
	return c, func() { severed.Store(true) }
}

// election returns c's election on name or fails the test.
func election(t testing.TB, c *redlock.Client, name string, opts ...redlock.LockOption) *redlock.Election {
	t.Helper()
	e, err := c.NewElection(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// awaitQueued polls until a client waits in the queue of key on a quorum
// of cluster's nodes.
func awaitQueued(t testing.TB, cluster *redlocktest.Cluster, key string) {
	t.Helper()
	queue, _ := redlock.QueueKeys(key)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := 0
		for _, node := range cluster.Nodes() {
			if v, err := node.Do(bg, "ZCARD", queue); err == nil && v != "0" {
				n++
			}
		}
		if n >= len(cluster.Nodes())/2+1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no client queued for %q on a quorum of nodes", key)
		}
	}
}

// A Resign that could not release the lead can be retried: the lock then
// leaves the nodes at once, not at its TTL, and the next candidate is
// elected.
func TestElection_failedResignIsRetried(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster, severed, first, next := unreleasedLead(t, a)
		severed.Store(false)
		if err := first.Resign(bg); err != nil {
			t.Fatalf("Resign again: %v", err)
		}
		wantLeadGone(t, cluster, first, next)
	})
}

// A Campaign that could not release the lead a failed Resign left keeps
// it for the next Resign.
func TestElection_failedCampaignKeepsTheUnreleasedLead(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster, severed, first, next := unreleasedLead(t, a)
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		if err := first.Campaign(ctx, "a"); err == nil {
			t.Fatal("Campaign cut off from the nodes succeeded")
		}
		severed.Store(false)
		if err := first.Resign(bg); err != nil {
			t.Fatalf("Resign after the failed Campaign: %v", err)
		}
		wantLeadGone(t, cluster, first, next)
	})
}

// unreleasedLead elects the first of two candidates on three nodes with a
// lead of 20 s, then cuts its client off the nodes (until severed is
// cleared) and has its Resign fail.
func unreleasedLead(t *testing.T, a adapter) (cluster *redlocktest.Cluster, severed *atomic.Bool, first, next *redlock.Election) {
	t.Helper()
	cluster = redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	severed = new(atomic.Bool)
	var conns []redlock.Conn
	for _, c := range a.conns(t, cluster.Addrs()) {
		conns = append(conns, severableConn{Conn: c, severed: severed})
	}
	c, err := redlock.New(conns, fast())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.MarkReady(bg, false); err != nil {
		t.Fatal(err)
	}
	first = election(t, c, "svc", redlock.WithTTL(leadTTL))
	next = election(t, newClient(t, cluster, a, fast()), "svc", redlock.WithTTL(leadTTL))
	if err := first.Campaign(bg, "a"); err != nil {
		t.Fatal(err)
	}
	severed.Store(true)
	if err := first.Resign(bg); !errors.Is(err, redlock.ErrNotReleased) {
		t.Fatalf("Resign cut off from the nodes: %v, want ErrNotReleased", err)
	}
	if first.Err() == nil {
		t.Error("the candidate still leads after its Resign")
	}
	return cluster, severed, first, next
}

// leadTTL is the lead of unreleasedLead: far longer than the tests wait.
const leadTTL = 20 * time.Second

// wantLeadGone checks that a quorum of cluster's nodes is free of first's
// lead, and that next is elected, with a greater term, well within the
// lead's TTL.
func wantLeadGone(t *testing.T, cluster *redlocktest.Cluster, first, next *redlock.Election) {
	t.Helper()
	if free := nodesFree(t, cluster, "svc"); free < 2 {
		t.Errorf("%d of 3 nodes free of the lead after the Resign, want a quorum", free)
	}
	ctx, cancel := context.WithTimeout(bg, leadTTL/2)
	defer cancel()
	if err := next.Campaign(ctx, "b"); err != nil {
		t.Fatalf("the next candidate, within the resigned lead's %s TTL: %v", leadTTL, err)
	}
	defer next.Resign(bg)
	if next.Term() <= first.Term() {
		t.Errorf("next term %d not above %d", next.Term(), first.Term())
	}
}

// A campaign value that cannot be an owner fails, naming the value.
func TestElection_badValueNamesIt(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	e, err := newClient(t, cluster, adapters[0], fast()).NewElection("lead")
	if err != nil {
		t.Fatal(err)
	}
	err = e.Campaign(bg, "a b")
	if !errors.Is(err, redlock.ErrInvalidOwner) || !strings.Contains(err.Error(), `Campaign's value "a b"`) {
		t.Errorf("Campaign with a space in its value: %v, want ErrInvalidOwner naming the value", err)
	}
}

// A leader's value stands for its term: Campaign again with it returns nil,
// with another value fails clearly, and the leader keeps leading with its
// value either way.
func TestElection_campaignAgainWhileLeading(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], fast())
	e, err := c.NewElection("svc")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Campaign(bg, "host-a"); err != nil {
		t.Fatal(err)
	}
	defer e.Resign(bg)
	term := e.Lock().Fence()
	if err := e.Campaign(bg, "host-a"); err != nil {
		t.Errorf("Campaign again with the lead's value: %v, want nil", err)
	}
	if err := e.Campaign(bg, "host-b"); !errors.Is(err, redlock.ErrInvalidOptions) || !strings.Contains(err.Error(), `"host-a"`) {
		t.Errorf("Campaign with another value while leading: %v, want ErrInvalidOptions naming the lead's value", err)
	}
	l, err := c.NewElection("svc")
	if err != nil {
		t.Fatal(err)
	}
	if leader, err := l.Leader(bg); err != nil || leader.Value != "host-a" || leader.Term != term {
		t.Errorf("Leader: %+v %v, want host-a in term %d", leader, err, term)
	}
}

// A candidate second in line while the nodes sit out their restart
// quarantine hears that they recover, on every attempt: a waiter for a
// set of keys, as a candidate is, applies the quarantine before it defers
// to the clients queued before it. Before, its later attempts were
// refused as if the key were kept for those clients, the Logger said the
// nodes voted again 4 ms after it said they were recovering, and the
// nodes' recovery delays did not start at its attempts.
func TestElection_secondCandidateHearsTheNodesRecover(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Unmarked: true})
	candidate := func(name string) (*redlock.Election, *records) {
		log := &records{}
		opts := &redlock.Options{TTL: 3 * time.Second, NodeTimeout: time.Second, RecoveryDelay: 20 * time.Second, Logger: slog.New(log)}
		c, err := redlock.New(goredisConns(t, cluster.Addrs()), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		e, err := c.NewElection("recovering")
		if err != nil {
			t.Fatal(err)
		}
		return e, log
	}
	first, firstLog := candidate("first")
	second, secondLog := candidate("second")
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	go first.Campaign(ctx, "first")
	eventually(t, "the first candidate queued on the recovering nodes", func() bool {
		return strings.Count(firstLog.text(), "node recovering from a restart") >= 2
	})
	short, cancelShort := context.WithTimeout(bg, 2*time.Second)
	defer cancelShort()
	err := second.Campaign(short, "second")
	if err == nil {
		t.Fatal("the second candidate was elected while every node recovers")
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("Campaign = %v, want the last attempt's QuorumError", err)
	}
	// A quorum refused as recovering decides the attempt: the last node
	// may not have been waited for.
	recovering := 0
	for _, n := range qe.Nodes {
		switch n.Outcome {
		case redlock.OutcomeRecovering:
			recovering++
		case redlock.OutcomeHeld:
			t.Errorf("the second candidate's last attempt: %s held, want recovering: %v", n.Node, err)
		}
	}
	if recovering < 2 {
		t.Errorf("the second candidate's last attempt: %d nodes recovering, want a quorum: %v", recovering, err)
	}
	if text := secondLog.text(); strings.Contains(text, "voting again") {
		t.Errorf("the Logger was told the nodes vote again while they recover:\n%s", text)
	}
}

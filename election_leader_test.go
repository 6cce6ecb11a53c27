package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// Leader answers once a quorum of the nodes settles it: a paused node,
// whose connection gives up only after 30 s, is not waited for at all,
// where it was waited for until the read's bound (here the per-node
// timeout, 5 s).
func TestElection_leaderDoesNotWaitForAPausedMinority(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	conns := make([]redlock.Conn, 3)
	for i, n := range cluster.Nodes() {
		conns[i] = goredis.NewOwned(goredisv9.NewClient(&goredisv9.Options{Addr: n.Addr(), ReadTimeout: 30 * time.Second}))
	}
	c, err := redlock.New(conns, &redlock.Options{TTL: 30 * time.Second, NodeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e := election(t, c, "svc")
	if err := e.Campaign(bg, "host-a"); err != nil {
		t.Fatal(err)
	}
	defer e.Resign(bg)
	// Campaign returned at a quorum: the nodes left running hold the lead
	// before node 2 is paused.
	lead := e.Lock()
	waitForKey(t, cluster, lead.Key(), lead.Token())
	if err := cluster.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resumeAll(t, cluster) })
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	start := time.Now()
	l, err := e.Leader(ctx)
	took := time.Since(start)
	if err != nil || l.Value != "host-a" {
		t.Fatalf("Leader with a node paused: %+v, %v; want host-a", l, err)
	}
	// The two nodes left answer within milliseconds; the paused one would
	// have held the read for its 5 s timeout.
	if took >= 2500*time.Millisecond {
		t.Errorf("Leader took %s with one node of three paused, want it to end once the other two answered", took)
	}
}

// The leader may hold a lock of another library under the election's name:
// Leader and Observe show it, with no term (it has no fencing token), not
// with the term of the last leader that left the name's counter behind.
func TestElection_aLockOfAnotherLibraryLeadsWithoutATerm(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], fast())
	e := election(t, c, "svc")
	if err := e.Campaign(bg, "host-a"); err != nil {
		t.Fatal(err)
	}
	if err := e.Resign(bg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	seen := e.Observe(ctx)
	if l := <-seen; !l.Vacant() {
		t.Fatalf("Observe after the resignation: %+v, want a vacancy", l)
	}
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "SET", "svc", "another-library-token", "PX", "20000"); err != nil {
			t.Fatal(err)
		}
	}
	l, err := e.Leader(bg)
	if err != nil || l.Token != "another-library-token" || l.Term != 0 || l.Value != "" || !l.Since.IsZero() {
		t.Errorf("Leader: %+v, %v; want another-library-token with no term, value or time", l, err)
	}
	select {
	case l := <-seen:
		if l.Token != "another-library-token" || l.Term != 0 {
			t.Errorf("Observe: %+v, want another-library-token with no term", l)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("Observe did not report the lock of another library within 10 s")
	}
}

// Leader says what ended it when too few nodes answer: its context's
// deadline, which the nodes' requests share, and Close, which cuts them
// short. Before, about half the reads that ctx's deadline ended did not
// wrap context.DeadlineExceeded (the requests' timers fired before ctx's),
// and one that Close cut short did not wrap ErrClosed.
func TestElection_leaderCutShortSaysWhy(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], nil)
	e := election(t, c, "svc")
	// No campaign: a leader's renewals would run scripts on the node that
	// answers, which the wait for Leader's read below counts.
	for _, n := range cluster.Nodes()[1:] {
		if err := n.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { resumeAll(t, cluster) })

	for i := range 5 {
		ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
		_, err := e.Leader(ctx)
		cancel()
		if !errors.Is(err, redlock.ErrLeaderUnknown) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("read %d, ended by its context's deadline with 2 of 3 nodes paused: %v; want ErrLeaderUnknown and context.DeadlineExceeded", i, err)
		}
	}

	answering := cluster.Node(0)
	before := scriptCallsOn(t, answering)
	done := make(chan error, 1)
	go func() {
		_, err := e.Leader(bg)
		done <- err
	}()
	// Close comes once Leader reads: during its first read, or its second,
	// which waits 3 s for the paused nodes.
	eventually(t, "Leader's read reaches the node that answers", func() bool { return scriptCallsOn(t, answering) > before })
	c.Close()
	err := <-done
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrClosed) || !errors.As(err, &qe) || !errors.Is(err, redlock.ErrLeaderUnknown) {
		t.Errorf("Leader cut short by Close: %v; want ErrClosed wrapping the read's *QuorumError (ErrLeaderUnknown)", err)
	}
}

// A leader read that enough nodes answered, naming no one leader on a
// quorum of them, says so, not the acquisition's "validity left".
func TestElection_unknownLeaderWordsItsReason(t *testing.T) {
	qe := &redlock.QuorumError{Op: "leader", Key: "svc", OK: 4, Quorum: 3, Err: redlock.ErrLeaderUnknown,
		Nodes: make([]redlock.NodeResult, 5)}
	for i := range qe.Nodes {
		qe.Nodes[i] = redlock.NodeResult{Node: fmt.Sprint("n", i), Outcome: redlock.OutcomeOK}
	}
	if msg := qe.Error(); !strings.Contains(msg, "no one leader on a quorum of them") || strings.Contains(msg, "validity") {
		t.Errorf("unknown leader with 4 of 5 answers: %q", msg)
	}
}

// A read that meets the nodes holding the leader's lock with counters
// that disagree, as while the leader's acquisition raises them to its
// fencing token (its granting nodes disagreed), reads the nodes again a
// node timeout later: Leader reports the term they settle on, the lock's
// fencing token, not one the leader never has (the quorum-th largest of
// the counters it met first).
func TestElection_leaderReadsAgainWhileTheTermSettles(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	lock, err := holder.TryAcquire(bg, "lead", redlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waitForKey(t, cluster, lock.WireKey(), lock.Token())
	observer := newClient(t, cluster, adapters[0], &redlock.Options{NodeTimeout: time.Second})
	e := election(t, observer, "lead")
	term := lock.Fence()
	setCounters := func(values ...uint64) {
		for i, n := range cluster.Nodes() {
			do(t, n, "SET", redlock.FenceKey(lock.WireKey()), fmt.Sprint(values[i]), "KEEPTTL")
		}
	}
	reads := func(n *redlocktest.Node) string {
		var calls []string
		for line := range strings.Lines(do(t, n, "INFO", "commandstats")) {
			if name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls="); ok && strings.Contains(name, "cmdstat_fcall") ||
				ok && strings.Contains(name, "cmdstat_eval") {
				calls = append(calls, name+stats)
			}
		}
		return strings.Join(calls, " ")
	}
	setCounters(term-2, term-1, term)
	before := make([]string, 3)
	for i, n := range cluster.Nodes() {
		before[i] = reads(n)
	}
	got := make(chan redlock.Leader, 1)
	go func() {
		l, err := e.Leader(bg)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	eventually(t, "the observer's first read on every node", func() bool {
		for i, n := range cluster.Nodes() {
			if reads(n) == before[i] {
				return false
			}
		}
		return true
	})
	setCounters(term, term, term)
	if l := <-got; l.Term != term {
		t.Fatalf("Leader reported term %d, want the lock's fencing token %d", l.Term, term)
	}
}

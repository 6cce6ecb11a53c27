package redlock_test

import (
	"context"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// Leader answers once a quorum of the nodes settles it: a paused node,
// whose connection gives up only after 10 s, is left out after a few node
// timeouts, rather than waited for 3 s, as an operator's Inspect waits.
func TestElection_leaderDoesNotWaitForAPausedMinority(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	conns := make([]redlock.Conn, 3)
	for i, n := range cluster.Nodes() {
		conns[i] = goredis.NewOwned(goredisv9.NewClient(&goredisv9.Options{Addr: n.Addr(), ReadTimeout: 10 * time.Second}))
	}
	c, err := redlock.New(conns, &redlock.Options{NodeTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e, err := c.NewElection("svc")
	if err != nil {
		t.Fatal(err)
	}
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
	// Four node timeouts, which rise up to 400 ms while replies come late,
	// against the 3 s an Inspect waits for the paused node.
	if took >= 2500*time.Millisecond {
		t.Errorf("Leader took %s with one node of three paused, want it to end within a few node timeouts", took)
	}
}

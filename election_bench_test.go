package redlock_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// BenchmarkElectionFailover measures how long an election of 5 nodes goes
// without a leader. resign: from a leader's Resign to the election of the
// candidate waiting (reported as resign-ms). kill: from the moment a
// leader's Client stops renewing without resigning (Close) to the next
// election (kill-ms), beside the TTL its lock had left on the nodes at that
// moment (ttl-left-ms): the next leader should come right after the TTL
// left, plus at most a retry delay (the dead leader's lock expires
// unannounced).
func BenchmarkElectionFailover(b *testing.B) {
	cluster := redlocktest.Start(b, redlocktest.Options{Nodes: 5})
	const ttl = time.Second
	opts := &redlock.Options{TTL: ttl, NodeTimeout: 300 * time.Millisecond}
	next := newClient(b, cluster, adapters[0], opts)
	var resign, kill, left time.Duration
	for i := 0; b.Loop(); i++ {
		name := "failover:" + strconv.Itoa(i)
		resign += electionFailover(b, cluster, newClient(b, cluster, adapters[0], opts), next, name+":resign", true)
		leader := newClient(b, cluster, adapters[0], opts)
		leader.Inspect(bg, name) // connect every node first
		took := electionFailover(b, cluster, leader, next, name+":kill", false)
		kill += took
		left += leftAtKill
	}
	n := float64(b.N)
	b.ReportMetric(float64(resign.Milliseconds())/n, "resign-ms")
	b.ReportMetric(float64(kill.Milliseconds())/n, "kill-ms")
	b.ReportMetric(float64(left.Milliseconds())/n, "ttl-left-ms")
}

// leftAtKill is the TTL the last killed leader's lock had left on the nodes
// (the quorum-th longest) when its Client closed.
var leftAtKill time.Duration

// electionFailover elects a candidate of leader on name, campaigns with next
// behind it, and returns how long next took to be elected after the
// leader resigned, or its Client closed.
func electionFailover(b *testing.B, cluster *redlocktest.Cluster, leader, next *redlock.Client, name string, resign bool) time.Duration {
	first, err := leader.NewElection(name)
	if err != nil {
		b.Fatal(err)
	}
	if err := first.Campaign(bg, "a"); err != nil {
		b.Fatal(err)
	}
	second, err := next.NewElection(name)
	if err != nil {
		b.Fatal(err)
	}
	elected := make(chan time.Time, 1)
	go func() {
		if err := second.Campaign(bg, "b"); err != nil {
			b.Error(err)
		}
		elected <- time.Now()
	}()
	awaitQueued(b, cluster, name)
	start := time.Now()
	if resign {
		first.Resign(bg)
	} else {
		states, _ := next.Inspect(bg, name)
		leftAtKill = quorumTTL(states, first.Lock().Token(), 3) - time.Since(start)
		start = time.Now()
		leader.Close()
	}
	took := (<-elected).Sub(start)
	second.Resign(bg)
	return took
}

// quorumTTL returns the TTL after which fewer than quorum of states hold
// token.
func quorumTTL(states []redlock.NodeState, token string, quorum int) time.Duration {
	var ttls []time.Duration
	for _, s := range states {
		if s.Holder == token {
			ttls = append(ttls, s.TTL)
		}
	}
	if len(ttls) < quorum {
		return 0
	}
	slices.Sort(ttls)
	return ttls[len(ttls)-quorum]
}

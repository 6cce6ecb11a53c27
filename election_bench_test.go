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
// leader's Client loses every node without resigning, as a killed process
// does, to the next election (kill-ms), beside the TTL its lock had left on
// the nodes at that moment (ttl-left-ms): the next leader comes right after
// the TTL left, plus a round trip: a waiting candidate tries again when the
// lead's key expires on a quorum (the dead leader's lock expires
// unannounced).
func BenchmarkElectionFailover(b *testing.B) {
	cluster := redlocktest.Start(b, redlocktest.Options{Nodes: 5})
	opts := &redlock.Options{TTL: time.Second, NodeTimeout: 300 * time.Millisecond}
	next := newClient(b, cluster, adapters[0], opts)
	var resign, kill, left time.Duration
	for i := 0; b.Loop(); i++ {
		name := "failover:" + strconv.Itoa(i)
		took, _ := electionFailover(b, cluster, newClient(b, cluster, adapters[0], opts), next, name+":resign", nil)
		resign += took
		leader, die := severableClient(b, cluster, adapters[0], opts)
		took, ttlLeft := electionFailover(b, cluster, leader, next, name+":kill", die)
		kill, left = kill+took, left+ttlLeft
	}
	n := float64(b.N)
	b.ReportMetric(float64(resign.Milliseconds())/n, "resign-ms")
	b.ReportMetric(float64(kill.Milliseconds())/n, "kill-ms")
	b.ReportMetric(float64(left.Milliseconds())/n, "ttl-left-ms")
}

// electionFailover elects a candidate of leader on name, campaigns with
// next behind it, ends the lead, and returns how long next took to be
// elected after that. The lead ends by Resign when kill is nil, else by
// kill, which severs leader from the nodes; the TTL the lead's lock then
// had left on a quorum of them is returned too.
func electionFailover(b *testing.B, cluster *redlocktest.Cluster, leader, next *redlock.Client, name string, kill func()) (took, left time.Duration) {
	first := election(b, leader, name)
	if err := first.Campaign(bg, "a"); err != nil {
		b.Fatal(err)
	}
	second := election(b, next, name)
	elected := make(chan time.Time, 1)
	go func() {
		if err := second.Campaign(bg, "b"); err != nil {
			b.Error(err)
		}
		elected <- time.Now()
	}()
	awaitQueued(b, cluster, name)
	start := time.Now()
	if kill == nil {
		first.Resign(bg)
	} else {
		states, _ := next.Inspect(bg, name)
		left = quorumTTL(states, first.Lock().Token(), 3) - time.Since(start)
		start = time.Now()
		kill()
	}
	took = (<-elected).Sub(start)
	second.Resign(bg)
	return took, left
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

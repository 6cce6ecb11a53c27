package doctor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A master without a replica, in a Redis Cluster whose other masters have
// some, relies on a failover it does not have: a warning on its shard, and
// nothing more when grants wait for replicas (the replica check rates that
// critical) or when no master has a replica.
func TestClusterFindings_masterWithoutReplica(t *testing.T) {
	cluster := func(replicas ...int) Node {
		n := Node{Node: "cluster:a", Reachable: true, Cluster: true}
		for i, r := range replicas {
			addr := fmt.Sprintf("10.0.0.%d:6379", i+1)
			n.Shards = append(n.Shards, Shard{Slots: []SlotRange{{i * 100, i*100 + 99}}, ClusterState: "ok",
				Master: Node{Node: addr, Reachable: true, Role: "master", Replicas: r, MaxMemoryPolicy: "noeviction", ClockKnown: true}})
		}
		return n
	}
	lone := func(n Node, l Limits) []Finding {
		r := &Report{Nodes: []Node{n}, Quorum: 1, Reachable: 1}
		var out []Finding
		for _, f := range r.findings(l) {
			if f.Check == "replica" && f.Shard == n.Shards[1].Name() {
				out = append(out, f)
			}
		}
		return out
	}
	fs := lone(cluster(1, 0, 2), Limits{Quarantine: true})
	if len(fs) != 1 || fs[0].Severity != Warning || !strings.Contains(fs[0].Message, "2 other master(s)") || fs[0].Node != "cluster:a" {
		t.Errorf("lone master among masters with replicas: %v; want one warning naming the 2 others", fs)
	}
	if fs := lone(cluster(1, 0, 2), Limits{Quarantine: true, WaitReplicas: 1}); len(fs) != 1 || fs[0].Severity != Critical {
		t.Errorf("lone master with WaitReplicas 1: %v; want the replica check's critical only", fs)
	}
	if fs := lone(cluster(0, 0, 0), Limits{Quarantine: true}); len(fs) != 0 {
		t.Errorf("no master with a replica: %v; want none", fs)
	}
}

// Grants that wait for every replica a master has leave a promoted replica
// short of one: a warning; waiting for fewer is information only.
func TestReplicaFindings_waitingForEveryReplica(t *testing.T) {
	for _, tc := range []struct {
		replicas, wait int
		want           Severity
	}{{1, 1, Warning}, {2, 2, Warning}, {2, 1, Info}} {
		var fs findingList
		replicaFindings(&fs, Node{Node: "a", Role: "master", Replicas: tc.replicas}, Limits{Quarantine: true, WaitReplicas: tc.wait})
		if len(fs) != 1 || fs[0].Severity != tc.want {
			t.Errorf("%d replicas, WaitReplicas %d: %v; want one %v", tc.replicas, tc.wait, fs, tc.want)
		}
	}
}

// A Sentinel-managed node whose Sentinels know no master by its name is a
// configuration error, not a node that does not run.
func TestUnreachableFindings_unknownMasterName(t *testing.T) {
	var fs findingList
	unreachableFindings(&fs, Node{Node: "nosuch@sentinel:10.0.0.1:26379",
		Err: errors.New("redis: all sentinels specified in configuration are unreachable: redis: nil (no such master: the Sentinels know no master by this URL's master_name)")})
	if len(fs) != 1 || fs[0].Severity != Critical || fs[0].Check != "config" || !strings.Contains(fs[0].Remedy, "master_name") {
		t.Errorf("unknown master name: %v; want one critical config finding naming master_name", fs)
	}
}

// A replica or a Sentinel named as a node gets one critical finding that
// says so, not the checks of a lock node (functions, eviction, clock), and
// does not vote.
func TestServerFindings_replicaOrSentinelAsNode(t *testing.T) {
	for _, info := range []map[string]string{
		{"role": "slave", "redis_version": "7.0.15"},
		{"redis_mode": "sentinel", "role": "master", "redis_version": "7.0.15"},
	} {
		n := Node{Node: "a", Reachable: true}
		n.applyInfo(info)
		var fs findingList
		serverFindings(&fs, n, Limits{Quarantine: true})
		if len(fs) != 1 || fs[0].Severity != Critical || fs[0].Check != "replica" {
			t.Errorf("%v: findings %v; want one critical replica finding", info, fs)
		}
		if n.votes() {
			t.Errorf("%v: votes", info)
		}
	}
}

// A Redis Cluster node serves some slots no more when a master is
// unreachable, its cluster state is fail, or slots are unassigned.
func TestNode_slotsUnserved(t *testing.T) {
	up := Shard{Master: Node{Reachable: true}, ClusterState: "ok"}
	for _, tc := range []struct {
		n    Node
		want bool
	}{
		{Node{Cluster: true, Shards: []Shard{up, up}}, false},
		{Node{Cluster: true, Shards: []Shard{up, {Master: Node{}}}}, true},
		{Node{Cluster: true, Shards: []Shard{up, {Master: Node{Reachable: true}, ClusterState: "fail"}}}, true},
		{Node{Cluster: true, Shards: []Shard{up}, Uncovered: []SlotRange{{First: 0, Last: 10}}}, true},
		{Node{Reachable: true}, false},
	} {
		if got := tc.n.SlotsUnserved(); got != tc.want {
			t.Errorf("SlotsUnserved of %+v = %v, want %v", tc.n, got, tc.want)
		}
	}
}

package doctor_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/cmd/redlock/internal/doctor"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// clusterConn returns a goredis Conn over a Redis Cluster, as a node URL
// with the cluster parameter and two seed nodes names it.
func clusterConn(t *testing.T, cluster *redlocktest.Cluster) redlock.Conn {
	t.Helper()
	conn, err := goredis.NewURL(cluster.URLs()[0] + "?cluster=1&addr=" + cluster.Addrs()[1])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// shardFindings returns the report's findings of check about the shard
// named shard.
func shardFindings(r *doctor.Report, shard, check string) []doctor.Finding {
	var fs []doctor.Finding
	for _, f := range r.Findings {
		if f.Shard == shard && f.Check == check {
			fs = append(fs, f)
		}
	}
	return fs
}

// wantShards fails the test unless node is the audit of cluster shard by
// shard: one reachable master per cluster node, in slot order, each with
// the slots it was given, and returns the shards.
func wantShards(t *testing.T, cluster *redlocktest.Cluster, node doctor.Node) []doctor.Shard {
	t.Helper()
	if !node.Reachable || !node.Cluster || len(node.Shards) != len(cluster.Nodes()) {
		t.Fatalf("cluster node: Reachable %v, Cluster %v, %d shards; want a reachable cluster of %d",
			node.Reachable, node.Cluster, len(node.Shards), len(cluster.Nodes()))
	}
	for i, s := range node.Shards {
		cn := cluster.Node(i)
		var want []doctor.SlotRange
		for _, r := range cn.Slots() {
			want = append(want, doctor.SlotRange{First: r.First, Last: r.Last})
		}
		if s.Master.Node != cn.Addr() || !slices.Equal(s.Slots, want) {
			t.Errorf("shard %d: %s slots %v; want %s slots %v", i, s.Master.Node, s.Slots, cn.Addr(), want)
		}
		if !s.Master.Reachable || s.Master.Role != "master" || s.Master.Version != installedVersion(t).String() || len(s.ID) != 40 {
			t.Errorf("shard %d: Reachable %v, Role %q, Version %q, ID %q", i, s.Master.Reachable, s.Master.Role, s.Master.Version, s.ID)
		}
		if s.ClusterState != "ok" {
			t.Errorf("shard %d: cluster_state %q", i, s.ClusterState)
		}
	}
	return node.Shards
}

// A fresh Redis Cluster node is audited master by master: each shard,
// named by its address and slots, has every slot unmarked until the slots
// are marked ready, and no finding speaks of the cluster as a whole.
func TestAudit_redisClusterShards(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, Unmarked: true})
	conns := []redlock.Conn{clusterConn(t, cluster)}
	wantUnmarked(t, cluster, audit(t, conns, nil))
	c, _ := client(t, conns, nil)
	if err := c.MarkReady(bg, false); err != nil {
		t.Fatal(err)
	}
	wantAllReady(t, cluster, audit(t, conns, nil))
	auditSlotStates(t, cluster, conns)
}

// wantUnmarked fails the test unless r, the audit of a fresh Redis Cluster
// node, shows every slot of every shard unmarked, in one warning per shard
// that names it.
func wantUnmarked(t *testing.T, cluster *redlocktest.Cluster, r *doctor.Report) {
	t.Helper()
	n := r.Nodes[0]
	if !n.Recovering || n.PartlyRecovering || !n.NoMarker || n.RecoveringLeft != 30*time.Second || r.Available() {
		t.Errorf("fresh cluster: Recovering %v, PartlyRecovering %v, NoMarker %v, %s left, Available %v; want unmarked, the full 30 s, unavailable",
			n.Recovering, n.PartlyRecovering, n.NoMarker, n.RecoveringLeft, r.Available())
	}
	for i, s := range wantShards(t, cluster, n) {
		wantDefaultsAndLoopbackTiming(t, i, s.Master)
		if s.Markers.Ready != 0 || !slices.Equal(s.Markers.Unmarked, s.Slots) || s.Markers.Unreadable != nil {
			t.Errorf("%s: markers %+v; want every slot unmarked", s.Name(), s.Markers)
		}
		fs := shardFindings(r, s.Name(), "recovering")
		if len(fs) != 1 || fs[0].Node != n.Node || fs[0].Severity != doctor.Warning {
			t.Fatalf("%s: recovering findings %v; want one warning\n%s", s.Name(), fs, report(r))
		}
		total := slotCount(s.Slots)
		want := fmt.Sprintf("%d of %d slots unmarked (%s)", total, total, s.Slots[0])
		if !strings.Contains(fs[0].Message, want) || !strings.Contains(fs[0].Remedy, "redlock init") ||
			!strings.Contains(s.Name(), s.Master.Node+" slots "+s.Slots[0].String()) {
			t.Errorf("%s: finding %q; want %q and the remedy redlock init", s.Name(), fs[0], want)
		}
		// redlocktest's settings, per master.
		if fs := shardFindings(r, s.Name(), "persistence"); len(fs) != 1 {
			t.Errorf("%s: persistence findings %v", s.Name(), fs)
		}
	}
	wantNoFinding(t, r, n.Node, "cluster")
	wantNoFinding(t, r, n.Node, "recovering")
	wantNoCritical(t, r)
}

// wantAllReady fails the test unless r, the audit of a Redis Cluster node,
// shows every slot of every shard ready, and no recovering finding.
func wantAllReady(t *testing.T, cluster *redlocktest.Cluster, r *doctor.Report) {
	t.Helper()
	n := r.Nodes[0]
	for _, s := range wantShards(t, cluster, n) {
		if m := s.Markers; m.Ready != slotCount(s.Slots) || m.Unmarked != nil || m.Recovering != nil || m.Restarted != nil || m.Unreadable != nil {
			t.Errorf("%s after MarkReady: markers %+v; want every slot ready", s.Name(), m)
		}
	}
	if n.Recovering || n.NoMarker {
		t.Errorf("after MarkReady: Recovering %v, NoMarker %v", n.Recovering, n.NoMarker)
	}
	for _, f := range r.Findings {
		if f.Check == "recovering" {
			t.Errorf("after MarkReady: %s", f)
		}
	}
	wantNoCritical(t, r)
}

// auditSlotStates changes the restart markers of a few slots of a cluster
// whose slots are all ready, and checks that the audit sorts them.
func auditSlotStates(t *testing.T, cluster *redlocktest.Cluster, conns []redlock.Conn) {
	t.Helper()
	set := func(slot int, key, value string) {
		if _, err := cluster.NodeForSlot(slot).Do(bg, "SET", key+":{"+tagOf(slot)+"}", value); err != nil {
			t.Fatal(err)
		}
	}
	first1 := cluster.Node(1).Slots()[0].First
	set(0, markerKey, strconv.FormatInt(serverMicros(t, cluster.Node(0))-(10*time.Second).Microseconds(), 10)) // marked 10 s ago
	set(100, markerKey, "not a time")
	set(first1, "redlock:process", "0123456789abcdef0123456789abcdef01234567") // written by another process
	r := audit(t, conns, nil)
	// A few slots sitting out keep the node out of the locks of their keys
	// only: it votes for the others, and no lock but theirs waits.
	if n := r.Nodes[0]; n.Recovering || !n.PartlyRecovering || !r.Available() {
		t.Errorf("a few slots sitting out: Recovering %v, PartlyRecovering %v, Available %v; want only partly recovering, available",
			n.Recovering, n.PartlyRecovering, r.Available())
	}
	wantVotesForSomeKeysOnly(t, r)
	s0, s1 := r.Nodes[0].Shards[0], r.Nodes[0].Shards[1]
	m := s0.Markers
	if !slices.Equal(m.Recovering, []doctor.SlotRange{{First: 0, Last: 0}}) || m.RecoveringLeft > 20*time.Second || m.RecoveringLeft < 15*time.Second ||
		!slices.Equal(m.Unreadable, []doctor.SlotRange{{First: 100, Last: 100}}) || m.Ready != slotCount(s0.Slots)-2 {
		t.Errorf("%s: markers %+v; want slot 0 recovering about 20 s, slot 100 unreadable, the others ready", s0.Name(), m)
	}
	if m := s1.Markers; !slices.Equal(m.Restarted, []doctor.SlotRange{{First: first1, Last: first1}}) || m.Ready != slotCount(s1.Slots)-1 {
		t.Errorf("%s: markers %+v; want slot %d restarted, the others ready", s1.Name(), m, first1)
	}
	for _, want := range []struct {
		shard   doctor.Shard
		sev     doctor.Severity
		message string
	}{
		{s0, doctor.Warning, "1 of 5461 slots recovering (0)"},
		{s0, doctor.Info, "restart markers of 1 of 5461 slots unreadable (100: "},
		{s1, doctor.Warning, fmt.Sprintf("1 of %d slots restarted or failed over since they last voted (%d)", slotCount(s1.Slots), first1)},
	} {
		found := false
		for _, f := range shardFindings(r, want.shard.Name(), "recovering") {
			found = found || (f.Severity == want.sev && strings.Contains(f.Message, want.message))
		}
		if !found {
			t.Errorf("no %s finding %q on %s:\n%s", want.sev, want.message, want.shard.Name(), report(r))
		}
	}
}

// tagOf returns the tag the library gives slot's keys: the smallest
// decimal number that hashes to slot.
func tagOf(slot int) string {
	for n := 0; ; n++ {
		if s := strconv.Itoa(n); redlocktest.KeySlot(s) == slot {
			return s
		}
	}
}

// serverMicros returns node's clock, by TIME, in microseconds.
func serverMicros(t *testing.T, node *redlocktest.Node) int64 {
	t.Helper()
	v, err := node.Do(bg, "TIME")
	if err != nil {
		t.Fatal(err)
	}
	sec, usec, _ := strings.Cut(v, "\n")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(usec, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME reply %q", v)
	}
	return s*1e6 + us
}

// slotCount returns the number of slots in ranges.
func slotCount(ranges []doctor.SlotRange) int {
	n := 0
	for _, r := range ranges {
		n += r.Len()
	}
	return n
}

// A setting of one master is reported on its shard only.
func TestAudit_redisClusterEvictingShard(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	if _, err := cluster.Node(1).Do(bg, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru"); err != nil {
		t.Fatal(err)
	}
	r := audit(t, []redlock.Conn{clusterConn(t, cluster)}, nil)
	n := r.Nodes[0]
	shards := wantShards(t, cluster, n)
	if !r.Unsafe() {
		t.Errorf("Unsafe() = false with an evicting master:\n%s", report(r))
	}
	var evictions []doctor.Finding
	for _, f := range r.Findings {
		if f.Check == "eviction" {
			evictions = append(evictions, f)
		}
	}
	bad := shards[1]
	if len(evictions) != 1 || evictions[0].Shard != bad.Name() || evictions[0].Node != n.Node || evictions[0].Severity != doctor.Critical {
		t.Fatalf("eviction findings %v; want one critical on %s", evictions, bad.Name())
	}
	f := evictions[0]
	if !strings.Contains(f.String(), cluster.Node(1).Addr()+" slots "+bad.Slots[0].String()) || !strings.Contains(f.Message, "allkeys-lru") {
		t.Errorf("finding %q does not name the shard's address, slots and policy", f)
	}
	if bad.Master.MaxMemoryPolicy != "allkeys-lru" || shards[0].Master.MaxMemoryPolicy != "noeviction" {
		t.Errorf("maxmemory-policy %q on the evicting master, %q on another", bad.Master.MaxMemoryPolicy, shards[0].Master.MaxMemoryPolicy)
	}
}

// Slots that no master serves, and masters whose cluster_state is fail,
// are critical; such a node votes for no key (CLUSTERDOWN), so no lock can
// be taken on it.
func TestAudit_redisClusterUncovered(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	// Every node forgets slots 16000-16383, so that all views agree; their
	// owner first, as a node that forgot them learns them again from the
	// owner's next heartbeat while the owner still claims them.
	for _, n := range ownerFirst(t, cluster.Nodes(), 16383) {
		del := []string{"CLUSTER", "DELSLOTS"} // DELSLOTSRANGE is Redis 7's
		for slot := 16000; slot <= 16383; slot++ {
			del = append(del, strconv.Itoa(slot))
		}
		if _, err := n.Do(bg, del...); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range cluster.Nodes() {
		waitClusterState(t, n, "fail")
	}
	r := audit(t, []redlock.Conn{clusterConn(t, cluster)}, nil)
	n := r.Nodes[0]
	if len(n.Shards) != 3 || !slices.Equal(n.Uncovered, []doctor.SlotRange{{First: 16000, Last: 16383}}) {
		t.Fatalf("%d shards, uncovered %v; want 3, 16000-16383", len(n.Shards), n.Uncovered)
	}
	f := wantFinding(t, r, n.Node, "cluster", doctor.Critical)
	if !strings.Contains(f.Message, "384 slots") || !strings.Contains(f.Message, "16000-16383") {
		t.Errorf("message %q does not count and name the slots", f.Message)
	}
	for _, s := range n.Shards {
		if s.ClusterState != "fail" {
			t.Errorf("%s: cluster_state %q", s.Name(), s.ClusterState)
		}
		fs := shardFindings(r, s.Name(), "cluster")
		if len(fs) != 1 || fs[0].Severity != doctor.Critical || !strings.Contains(fs[0].Message, "cluster_state fail") {
			t.Errorf("%s: cluster findings %v; want one critical cluster_state fail", s.Name(), fs)
		}
	}
	if !r.Unsafe() {
		t.Error("Unsafe() = false with uncovered slots")
	}
	if r.Available() {
		t.Error("Available() = true while every master's cluster_state is fail: the node votes for no key")
	}
}

// ownerFirst returns nodes with the one that serves slot first.
func ownerFirst(t *testing.T, nodes []*redlocktest.Node, slot int) []*redlocktest.Node {
	t.Helper()
	for i, n := range nodes {
		// CLUSTER NODES: the line of the node asked is flagged myself,
		// and ends with the slots it serves, as ranges first-last.
		out, err := n.Do(bg, "CLUSTER", "NODES")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.Contains(line, "myself") {
				continue
			}
			for _, r := range strings.Fields(line)[8:] {
				first, last, ok := strings.Cut(r, "-")
				if !ok {
					last = first
				}
				lo, err1 := strconv.Atoi(first)
				hi, err2 := strconv.Atoi(last)
				if err1 == nil && err2 == nil && lo <= slot && slot <= hi {
					return append([]*redlocktest.Node{n}, slices.Delete(slices.Clone(nodes), i, i+1)...)
				}
			}
		}
	}
	t.Fatalf("no node serves slot %d", slot)
	return nil
}

// waitClusterState waits until node reports cluster_state state.
func waitClusterState(t *testing.T, node *redlocktest.Node, state string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := node.Do(bg, "CLUSTER", "INFO")
		if err == nil && strings.Contains(info, "cluster_state:"+state) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reported cluster_state:%s: %v %q", node.Addr(), state, err, info)
		}
	}
}

// A Redis Cluster that serves what it can (cluster-require-full-coverage
// no) and has lost a master still takes the locks of the other masters'
// slots: the node is available, with a warning that it does not vote for
// every key.
func TestAudit_redisClusterMasterLost(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "CONFIG", "SET", "cluster-require-full-coverage", "no"); err != nil {
			t.Fatal(err)
		}
	}
	conns := []redlock.Conn{clusterConn(t, cluster)}
	c, _ := client(t, conns, nil)
	if err := c.MarkReady(bg, false); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	r := audit(t, conns, nil)
	n := r.Nodes[0]
	if !n.Reachable || n.Recovering || !r.Available() {
		t.Errorf("one master of three lost: Reachable %v, Recovering %v, Available %v; want reachable and available", n.Reachable, n.Recovering, r.Available())
	}
	wantVotesForSomeKeysOnly(t, r)
}

// wantVotesForSomeKeysOnly fails the test unless r, the audit of one Redis
// Cluster node, has one quorum warning: the node votes for some keys only.
func wantVotesForSomeKeysOnly(t *testing.T, r *doctor.Report) {
	t.Helper()
	var warned []doctor.Finding
	for _, f := range shardFindings(r, "", "quorum") {
		if f.Severity == doctor.Warning {
			warned = append(warned, f)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0].Message, "0 of 1 nodes vote now for every key") {
		t.Errorf("quorum warnings %v; want one, that the node votes for some keys only\n%s", warned, report(r))
	}
}

// A Redis Cluster master with a replica is not told to set --wait-replicas,
// which every verb refuses for a cluster node (its client cannot send WAIT
// after a script to the node that ran it): the finding says so, and what
// keeps its locks safe; without the quarantine it is critical.
func TestAudit_redisClusterReplicasWithoutWaitReplicas(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, RedisCluster: true, ClusterReplicas: 1})
	conns := []redlock.Conn{clusterConn(t, cluster)}
	for _, quarantine := range []bool{true, false} {
		r := audit(t, conns, &redlock.Options{DisableQuarantine: !quarantine})
		for _, s := range r.Nodes[0].Shards {
			fs := shardFindings(r, s.Name(), "replica")
			want := doctor.Info
			if !quarantine {
				want = doctor.Critical
			}
			if len(fs) != 1 || fs[0].Severity != want || strings.Contains(fs[0].Remedy, "set --wait-replicas") ||
				!strings.Contains(fs[0].Message, "cannot wait for on a Redis Cluster") {
				t.Errorf("quarantine %v, %s: replica findings %v; want one %v that does not advise --wait-replicas", quarantine, s.Name(), fs, want)
			}
		}
	}
}

package doctor

import "time"

// clusterFindings reports on a Redis Cluster node audited master by
// master: the slots no master serves, then each shard's findings, which
// name the node and the shard.
func clusterFindings(fs *findingList, n Node, l Limits, recoveringSev Severity) {
	if len(n.Uncovered) > 0 {
		fs.add(n.Node, Critical, "cluster", "assign every slot to a master (redis-cli --cluster fix, or CLUSTER ADDSLOTS)",
			"%d slots served by no master (%s): no lock whose key hashes there can be taken on this node",
			slotCountOf(n.Uncovered), rangesText(n.Uncovered))
	}
	withReplicas := 0
	for _, s := range n.Shards {
		if s.Master.Replicas > 0 {
			withReplicas++
		}
	}
	for _, s := range n.Shards {
		var own findingList
		shardFindings(&own, s, l, recoveringSev, withReplicas)
		for _, f := range own {
			f.Node, f.Shard = n.Node, s.Name()
			*fs = append(*fs, f)
		}
	}
}

// shardFindings reports on one master of a Redis Cluster node: the checks
// of a standalone server, then its cluster state, a missing replica and the
// restart markers of its slots. withReplicas is how many masters of the
// cluster have a replica.
func shardFindings(fs *findingList, s Shard, l Limits, recoveringSev Severity, withReplicas int) {
	m := s.Master
	if !m.Reachable {
		unreachableFindings(fs, m)
		return
	}
	l.shard = true
	serverFindings(fs, m, l)
	down := s.ClusterState != "" && s.ClusterState != "ok"
	if down {
		fs.add(m.Node, Critical, "cluster", "restore the cluster: every slot served by a master that a majority of masters can reach (CLUSTER INFO, redis-cli --cluster check)",
			"cluster_state %s: the master refuses commands on its keys (CLUSTERDOWN), so no lock in its slots can be taken on this node", s.ClusterState)
	}
	// A master that grants without WAIT while its siblings have replicas
	// relies on failover it does not have; with WaitReplicas the replica
	// finding already rates a master short of replicas.
	if m.Role == "master" && m.Replicas == 0 && l.WaitReplicas == 0 && withReplicas > 0 {
		fs.add(m.Node, Warning, "replica", "attach a replica to this master, as to the others",
			"no replica while %d other master(s) of the cluster have some: if this master fails, nothing takes over and its slots stop serving locks until it returns", withReplicas)
	}
	if m.Loading {
		fs.add(m.Node, recoveringSev, "recovering", "wait until the master has loaded its data",
			"loading its data set: it refuses lock commands until done")
		return
	}
	if !down { // a master that is down refuses to read the markers too
		markerFindings(fs, m.Node, s, l.RecoveryDelay, recoveringSev)
	}
}

// markerFindings sums up the restart markers of a shard's slots: one
// finding per state in which slots sit out, or cannot be read.
func markerFindings(fs *findingList, node string, s Shard, delay time.Duration, sev Severity) {
	m := s.Markers
	total := slotCountOf(s.Slots)
	if len(m.Unmarked) > 0 {
		fs.add(node, sev, "recovering", "for a new deployment with no lock outstanding, run `redlock init` (Client.MarkReady); otherwise nothing: each slot's delay starts at its next acquisition",
			"%d of %d slots unmarked (%s): no restart marker (the master restarted empty, or the slot was never used), so each sits out %s from its next acquisition",
			slotCountOf(m.Unmarked), total, rangesText(m.Unmarked), delay)
	}
	if len(m.Restarted) > 0 {
		fs.add(node, sev, "recovering", "nothing: each slot's delay starts at its next acquisition and keeps safe the locks it held before; 'redlock init --force' lifts it, only when no lock can be outstanding",
			"%d of %d slots restarted or failed over since they last voted (%s): each sits out %s from its next acquisition",
			slotCountOf(m.Restarted), total, rangesText(m.Restarted), delay)
	}
	if len(m.Recovering) > 0 {
		fs.add(node, sev, "recovering", "wait: MarkReady is safe only when no lock can be outstanding",
			"%d of %d slots recovering (%s): out of every quorum for %s more at most",
			slotCountOf(m.Recovering), total, rangesText(m.Recovering), m.RecoveringLeft.Round(time.Millisecond))
	}
	if len(m.Unreadable) > 0 {
		fs.add(node, Info, "recovering", "allow MGET of the redlock:marker:* and redlock:process:* keys for this user, or audit again if slots were moving",
			"restart markers of %d of %d slots unreadable (%s: %s): their quarantine state is unknown",
			slotCountOf(m.Unreadable), total, rangesText(m.Unreadable), errText(m.Err))
	}
}

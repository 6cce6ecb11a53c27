package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// findingList collects findings.
type findingList []Finding

func (fs *findingList) add(node string, sev Severity, check, remedy, format string, args ...any) {
	*fs = append(*fs, Finding{Node: node, Severity: sev, Check: check, Message: fmt.Sprintf(format, args...), Remedy: remedy})
}

// findings turns the node audits into findings, most severe first.
func (r *Report) findings(l Limits) []Finding {
	var fs findingList
	recoveringSev := r.recoveringSeverity()
	for _, n := range r.Nodes {
		switch {
		case !n.Reachable:
			unreachableFindings(&fs, n)
		case n.Shards != nil:
			clusterFindings(&fs, n, l, recoveringSev)
		default:
			serverFindings(&fs, n, l)
			if n.lockNode() {
				recoveringFindings(&fs, n, recoveringSev)
			}
			if n.Cluster {
				fs.add(n.Node, Info, "cluster", "allow CLUSTER SHARDS (CLUSTER SLOTS before Redis 7) for this user, so that doctor audits every master",
					"a Redis Cluster, one node of the quorum, whose masters could not be listed (%s): these checks ran on one of its masters only; its restart quarantine works per hash slot",
					shardsErrText(n))
			}
		}
	}
	r.duplicateFindings(&fs)
	r.quorumFindings(&fs)
	ttlFindings(&fs, l)
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(b.Severity, a.Severity) })
	return fs
}

// unreachableFindings reports a node, or a shard's master, that did not
// answer.
func unreachableFindings(fs *findingList, n Node) {
	why := errText(n.Err)
	if n.CredentialsRefused() {
		// Critical however many nodes answer: a node that refuses its
		// URL is a configuration error, which makes every client of
		// this node list fail at once rather than work without it.
		fs.add(n.Node, Critical, "credentials",
			"check the user name and password in the node's URL, and the server's requirepass or ACL",
			"credentials refused: %s; no client takes a lock with this node list until it is fixed", why)
		return
	}
	if n.MasterUnknown() {
		fs.add(n.Node, Critical, "config",
			"give the master_name of the URL as the Sentinels monitor it (SENTINEL MASTERS lists them)",
			"%s; no client takes a lock with this node list until it is fixed", why)
		return
	}
	if isTimeout(n.Err) {
		why = fmt.Sprintf("no answer within %s", NodeTimeout)
	}
	fs.add(n.Node, Warning, "unreachable",
		"check that the server runs and that this host can reach it", "unreachable: %s", why)
}

// serverFindings runs the checks of one server: a standalone node, or a
// master of a Redis Cluster node.
func serverFindings(fs *findingList, n Node, l Limits) {
	checks := []func(*findingList, Node, Limits){versionFindings, replicaFindings, evictionFindings, memoryFindings,
		persistenceFindings, configFindings, clockFindings, functionsFindings, writesFindings}
	if !n.lockNode() {
		// Not a node for locks at all: what it lacks as one is noise.
		checks = checks[:2]
	}
	for _, check := range checks {
		check(fs, n, l)
	}
}

// shardsErrText says why a Redis Cluster node's masters were not listed.
func shardsErrText(n Node) string {
	if n.shardsErr == nil {
		return "this client cannot reach them one by one"
	}
	return errText(n.shardsErr)
}

// recoveringSeverity is Warning when the nodes that sit out cost the quorum,
// Info otherwise.
func (r *Report) recoveringSeverity() Severity {
	if r.Reachable >= r.Quorum && r.votingForEveryKey() < r.Quorum {
		return Warning
	}
	return Info
}

// voting counts the nodes that would vote in an acquisition now, for some
// key at least: reachable, not recovering nor loading, not a replica, and
// for a Redis Cluster node, with a master that serves its slots.
func (r *Report) voting() int {
	usable := 0
	for _, n := range r.Nodes {
		if n.votes() {
			usable++
		}
	}
	return usable
}

// recovering counts the reachable nodes that sit out a recovery delay.
func (r *Report) recovering() int {
	n := 0
	for _, node := range r.Nodes {
		if node.Reachable && (node.Recovering || node.PartlyRecovering) {
			n++
		}
	}
	return n
}

// lockNode reports whether n is a server that can hold locks at all: not
// a replica, nor a Sentinel.
func (n Node) lockNode() bool { return n.Role != "replica" && n.Role != "sentinel" }

// votes reports whether n would vote in an acquisition now, for some key
// at least (see voting).
func (n Node) votes() bool {
	return n.Reachable && !n.Recovering && !n.Loading && !n.WritesStalled && n.lockNode() && n.servesSomeSlot()
}

// votingForEveryKey counts the nodes that would vote now whatever the
// lock's key: voting, and, for a Redis Cluster node, serving every slot
// (see servesEverySlot).
func (r *Report) votingForEveryKey() int {
	usable := 0
	for _, n := range r.Nodes {
		if n.votes() && n.servesEverySlot() {
			usable++
		}
	}
	return usable
}

// SlotsUnserved reports a Redis Cluster node some of whose slots no
// reachable master serves now: slots unassigned, a master unreachable,
// or one whose cluster state is fail.
func (n Node) SlotsUnserved() bool {
	return len(n.Uncovered) > 0 || slices.ContainsFunc(n.Shards, func(s Shard) bool {
		return !s.Master.Reachable || s.ClusterState == "fail"
	})
}

// servesEverySlot reports whether a Redis Cluster node would vote for a
// lock whatever slot its key hashes to: every slot assigned, every master
// reachable and its cluster state ok, and no slot sitting out. It is true
// for any other node.
func (n Node) servesEverySlot() bool {
	if n.PartlyRecovering || len(n.Uncovered) > 0 {
		return false
	}
	for _, s := range n.Shards {
		if !s.Master.Reachable || (s.ClusterState != "" && s.ClusterState != "ok") {
			return false
		}
	}
	return true
}

// servesSomeSlot reports whether a Redis Cluster node would vote for a
// lock of some key: a master reachable with its cluster state ok. Where
// every master's state is fail, the cluster answers CLUSTERDOWN whatever
// the key. It is true for any other node.
func (n Node) servesSomeSlot() bool {
	if len(n.Shards) == 0 {
		return true
	}
	for _, s := range n.Shards {
		if s.Master.Reachable && (s.ClusterState == "" || s.ClusterState == "ok") {
			return true
		}
	}
	return false
}

// Available reports whether a quorum of the nodes would vote in an
// acquisition now: when not, no lock can be taken until nodes come back or
// sit out their recovery delay, whatever the findings' severities.
func (r *Report) Available() bool { return r.voting() >= r.Quorum }

func versionFindings(fs *findingList, n Node, l Limits) {
	switch {
	case n.infoErr != nil && l.Quarantine:
		// The quarantine could not see a restart that reloads older
		// data: the scripts refuse to vote rather than vote blind.
		fs.add(n.Node, Critical, "version", "allow INFO for this user (+info): the restart quarantine needs the run_id to see restarts",
			"INFO refused (%s): the node refuses every acquisition, as a restart that reloads older data would go unseen", errText(n.infoErr))
	case n.infoErr != nil:
		fs.add(n.Node, Info, "version", "allow INFO for this user",
			"INFO refused (%s): version, role and run_id unknown", errText(n.infoErr))
	case n.Version == "":
		fs.add(n.Node, Info, "version", "", "INFO has no redis_version: not a Redis server, or a proxy")
	case versionBelow(n.Version, 2, 6, 12):
		fs.add(n.Node, Critical, "version", "upgrade Redis: locks need SET NX PX and Lua scripts (2.6.12+)",
			"Redis %s is too old for locks", n.Version)
	}
}

func replicaFindings(fs *findingList, n Node, l Limits) {
	switch {
	case n.Role == "replica":
		fs.add(n.Node, Critical, "replica", "point the client at independent masters only, with no replication between them",
			"a replica, not an independent master: it refuses lock writes or loses them at the next sync")
	case n.Role == "sentinel":
		fs.add(n.Node, Critical, "replica", "name a Sentinel-managed master by its Sentinels' URL with ?master_name=NAME",
			"a Sentinel, not a master: it holds no keys")
	case l.WaitReplicas > n.Replicas:
		fs.add(n.Node, Critical, "replica", "lower --wait-replicas (Options.WaitReplicas) to the replicas the node has, or attach more",
			"grants wait for %d replica(s) but the master has %d connected: it counts none of its grants", l.WaitReplicas, n.Replicas)
	case n.Replicas > 0 && l.WaitReplicas == n.Replicas:
		fs.add(n.Node, Warning, "replica", "attach another replica, or lower --wait-replicas (Options.WaitReplicas) below the replicas the node has",
			"master with %d replica(s), all of which grants wait for (WAIT): a failover hands the locks over, but leaves the new master "+
				"with %d until the old one syncs again as a replica, and until then it counts none of its grants or extensions "+
				"(the locks held through it are lost when they are renewed)", n.Replicas, n.Replicas-1)
	case n.Replicas > 0 && l.WaitReplicas > 0:
		fs.add(n.Node, Info, "replica", "nothing to do",
			"master with %d replica(s); grants wait for %d of them (WAIT), so a failover to one of them hands the locks over", n.Replicas, l.WaitReplicas)
	case n.Replicas > 0 && l.shard:
		shardReplicaFindings(fs, n, l)
	case n.Replicas > 0 && !l.Quarantine:
		fs.add(n.Node, Critical, "replica", "set --wait-replicas (Options.WaitReplicas), or turn the restart quarantine back on, or turn off automatic failover for lock nodes",
			"master with %d replica(s), grants that do not wait for them, and no restart quarantine: a failover can promote a replica that never received a lock, and it votes at once", n.Replicas)
	case n.Replicas > 0:
		fs.add(n.Node, Warning, "replica", "set --wait-replicas (Options.WaitReplicas) so that grants reach a replica before they count",
			"master with %d replica(s) and grants that do not wait for them: a failover can lose the locks it granted; the restart quarantine keeps the promoted replica out for the recovery delay, which keeps them safe but none can be taken meanwhile", n.Replicas)
	}
	sentinelFindings(fs, n)
}

// shardReplicaFindings rates a Redis Cluster master with replicas, whose
// grants cannot wait for them: a cluster's client cannot send WAIT after
// a script to the node that ran it, so WaitReplicas is no remedy there.
func shardReplicaFindings(fs *findingList, n Node, l Limits) {
	if !l.Quarantine {
		fs.add(n.Node, Critical, "replica", "turn the restart quarantine back on, or turn off automatic failover for this cluster (cluster-replica-no-failover yes on its replicas)",
			"master with %d replica(s), which grants cannot wait for on a Redis Cluster, and no restart quarantine: a failover can promote a replica that never received a lock, and it votes at once", n.Replicas)
		return
	}
	fs.add(n.Node, Info, "replica", "nothing to set (a Redis Cluster's client cannot wait for replicas, so --wait-replicas is refused here); keep the restart quarantine on",
		"master with %d replica(s), which grants cannot wait for on a Redis Cluster: a failover can lose the locks it granted; the restart quarantine keeps the promoted master's slots out for the recovery delay, which keeps them safe but none can be taken there meanwhile", n.Replicas)
}

// sentinelFindings checks a Sentinel-managed master for what its failovers
// need (SAFETY.md, "Redis Cluster and Sentinel nodes"): a replica to
// promote, and min-replicas-to-write, without which an old master cut off
// from the Sentinels but not from clients keeps granting locks that the
// promoted one never sees.
func sentinelFindings(fs *findingList, n Node) {
	if !n.SentinelManaged || n.Role != "master" {
		return
	}
	if n.Replicas == 0 {
		fs.add(n.Node, Warning, "failover", "attach a replica, for the Sentinels to promote when the master fails",
			"Sentinel-managed master with no replica connected: no failover can replace it")
	}
	if n.MinReplicasToWrite == "0" {
		fs.add(n.Node, Warning, "failover", "CONFIG SET min-replicas-to-write 1 and min-replicas-max-lag 10 on the master and its replicas (and in their redis.conf); "+
			"with one replica, a promoted master then refuses writes (NOREPLICAS) until the old one syncs again as its replica: attach two",
			"min-replicas-to-write 0: a master cut off from the Sentinels and its replicas, but not from clients, keeps granting "+
				"locks after a failover, which the promoted master never sees")
	}
}

func evictionFindings(fs *findingList, n Node, _ Limits) {
	switch p := n.MaxMemoryPolicy; {
	case p == "" || p == "noeviction":
	case strings.HasPrefix(p, "volatile-") || strings.HasPrefix(p, "allkeys-"):
		fs.add(n.Node, Critical, "eviction", "set maxmemory-policy noeviction, in redis.conf too",
			"maxmemory-policy %s can evict lock keys, which carry a TTL", p)
	default:
		fs.add(n.Node, Warning, "eviction", "set maxmemory-policy noeviction, in redis.conf too",
			"unrecognised maxmemory-policy %s may evict lock keys", p)
	}
}

// persistenceFindings: without durable writes a restarted node can grant a
// lock still held elsewhere; the quarantine covers that, and without it
// nothing does.
// memoryFindings flags a node with maxmemory and noeviction that is at its
// limit: it refuses every new lock (OOM) until memory is freed, though it
// still takes releases, extensions and reads.
func memoryFindings(fs *findingList, n Node, _ Limits) {
	if n.MaxMemory <= 0 || n.UsedMemory < n.MaxMemory || (n.MaxMemoryPolicy != "" && n.MaxMemoryPolicy != "noeviction") {
		return
	}
	fs.add(n.Node, Critical, "memory", "raise maxmemory, or free memory on the node",
		"out of memory: %d bytes used of maxmemory %d, so the node refuses every new lock (OOM)", n.UsedMemory, n.MaxMemory)
}

// refusedTIME reports an error of TIME that is a refusal, an ACL's or a
// rename's, not a node that failed to answer.
func refusedTIME(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "NOPERM") || strings.Contains(err.Error(), "unknown command"))
}

func persistenceFindings(fs *findingList, n Node, l Limits) {
	sev, remedy := Warning,
		"keep the restart quarantine on, so that a node without its marker key sits out the recovery delay, or set appendfsync always"
	if !l.Quarantine {
		sev, remedy = Critical,
			"set appendonly yes and appendfsync always, or turn the restart quarantine back on (Options.DisableQuarantine false)"
	}
	switch {
	case n.AppendOnly == "no":
		fs.add(n.Node, sev, "persistence", remedy,
			"appendonly no: after a restart the node has forgotten the locks it granted")
	case n.AppendOnly == "yes" && n.AppendFsync != "" && n.AppendFsync != "always":
		fs.add(n.Node, sev, "persistence", remedy,
			"appendfsync %s: a crash loses the locks granted in the last moments before it", n.AppendFsync)
	case n.AppendOnly == "" || n.AppendFsync == "":
		fs.add(n.Node, Info, "persistence", remedy,
			"persistence unknown: cannot tell whether granted locks survive a crash")
	}
}

func configFindings(fs *findingList, n Node, _ Limits) {
	if n.configErr == nil {
		return
	}
	var unknown []string
	for _, f := range []struct{ name, val string }{
		{"appendonly", n.AppendOnly}, {"appendfsync", n.AppendFsync},
		{"maxmemory-policy", n.MaxMemoryPolicy}, {"save", n.Save},
	} {
		if f.val == "" {
			unknown = append(unknown, f.name)
		}
	}
	fs.add(n.Node, Info, "config", "check these settings with the provider: locks need maxmemory-policy noeviction",
		"CONFIG GET refused (%s): %s unknown", errText(n.configErr), strings.Join(unknown, ", "))
}

func clockFindings(fs *findingList, n Node, l Limits) {
	switch {
	case !n.ClockKnown && refusedTIME(n.timeErr):
		// The scripts read the node's clock too: a new lock's fencing
		// counter starts from it.
		fs.add(n.Node, Critical, "clock", "allow TIME for this user, and do not rename it away (rename-command)",
			"TIME refused (%s): the scripts read the node's clock with it, and every acquisition of a new lock fails", errText(n.timeErr))
	case !n.ClockKnown:
		fs.add(n.Node, Info, "clock", "allow TIME for this user to check the node's clock",
			"TIME refused (%s): clock offset unknown", errText(n.timeErr))
	case n.ClockOffset.Abs()-n.RTT/2 > l.DriftAllowance:
		fs.add(n.Node, Critical, "clock", "synchronise the node's clock with NTP, slewing rather than stepping",
			"clock %s off this host's (±%s), beyond the %s drift allowance for a %s TTL: a clock that steps expires locks early",
			n.ClockOffset.Round(time.Microsecond), (n.RTT / 2).Round(time.Microsecond), l.DriftAllowance, l.TTL)
	}
}

func recoveringFindings(fs *findingList, n Node, sev Severity) {
	switch {
	case n.Role == "replica":
		// Never part of a quorum: the replica finding says it all.
	case n.Loading:
		fs.add(n.Node, sev, "recovering", "wait until the node has loaded its data",
			"loading its data set: it refuses lock commands until done")
	case n.markerErr != nil && n.WritesStalled && isTimeout(n.markerErr):
		// A marker read that a write pause held back (by EVALSHA, where
		// the node runs no functions): the writes finding says it.
	case n.markerErr != nil && n.infoErr == nil:
		fs.add(n.Node, Info, "recovering", markerRemedy(n),
			"restart marker unreadable (%s): quarantine state unknown", errText(n.markerErr))
	case n.Restarted:
		fs.add(n.Node, sev, "recovering", "nothing: the next acquisition starts its delay, which keeps safe the locks it held before; 'redlock init --force' lifts it, only when no lock can be outstanding",
			"restarted or failed over since it last voted: it sits out %s from the next acquisition (no countdown runs until one reaches it)",
			n.RecoveringLeft.Round(time.Second))
	case n.Recovering && n.NoMarker:
		fs.add(n.Node, sev, "recovering", "on a brand-new deployment with no lock outstanding, run 'redlock init'; otherwise wait",
			"no restart marker (restarted empty, or never used): it sits out %s from the next acquisition (no countdown runs until one reaches it)",
			n.RecoveringLeft.Round(time.Second))
	case n.Recovering:
		fs.add(n.Node, sev, "recovering", "wait: 'redlock init --force' is safe only when no lock can be outstanding",
			"sitting out its recovery delay (it restarted, lost its data, or was never used before): out of every quorum for %s more",
			n.RecoveringLeft.Round(time.Millisecond))
	}
}

// markerRemedy is what lets n's restart marker be read again: the command
// the refusal names (Valkey names it; Redis 7 does not within a script),
// TIME where the node refused it to this user too (the scripts run it), or
// else the scripts and the marker's key.
func markerRemedy(n Node) string {
	cmd := refusedCommand(n.markerErr)
	if cmd == "" && n.timeErr != nil && refusedCommand(n.timeErr) != "" {
		cmd = refusedCommand(n.timeErr)
	}
	if cmd != "" {
		return "allow " + strings.ToUpper(cmd) + " for this user: the library's scripts run it"
	}
	return "allow EVALSHA and the restart marker key for this user"
}

// duplicateFindings reports nodes that are the same server, by run_id; the
// masters of a Redis Cluster node count as servers of their own.
func (r *Report) duplicateFindings(fs *findingList) {
	byRunID := map[string][]string{}
	var runIDs []string
	note := func(n Node, name string) {
		if n.Reachable && n.RunID != "" {
			if byRunID[n.RunID] == nil {
				runIDs = append(runIDs, n.RunID)
			}
			byRunID[n.RunID] = append(byRunID[n.RunID], name)
		}
	}
	for _, n := range r.Nodes {
		note(n, n.Node)
		for _, s := range n.Shards {
			note(s.Master, n.Node+" shard "+s.Master.Node)
		}
	}
	for _, id := range runIDs {
		if names := byRunID[id]; len(names) > 1 {
			fs.add("", Critical, "duplicate",
				"list each server once: one server must not vote more than once",
				"%s are the same server (run_id %s)", strings.Join(names, ", "), id)
		}
	}
}

// quorumFindings reports a majority lost or at its edge, and node counts
// that tolerate no failure or no more than one node fewer would
// (countFindings).
func (r *Report) quorumFindings(fs *findingList) {
	total := len(r.Nodes)
	// A node that answers but refuses this client's credentials counts
	// as one it cannot use, not as one that is down.
	back, reachable := "bring the unreachable nodes back", "reachable"
	if slices.ContainsFunc(r.Nodes, Node.CredentialsRefused) {
		back, reachable = "fix the nodes that refuse this client's credentials, and bring any unreachable one back", "usable"
	}
	switch {
	case r.Reachable < r.Quorum:
		fs.add("", Critical, "quorum", back+", or point the client at usable ones",
			"%d of %d nodes %s, %d needed: no lock can be acquired", r.Reachable, total, reachable, r.Quorum)
	case r.voting() < r.Quorum && r.recovering() > 0:
		fs.add("", Warning, "quorum", "on a brand-new deployment with no lock outstanding, run 'redlock init'; otherwise wait: a node's delay starts at the next acquisition that reaches it",
			"%d of %d nodes vote now, %d needed: no lock can be acquired until the others sit out their recovery delay",
			r.voting(), total, r.Quorum)
	case r.voting() < r.Quorum:
		fs.add("", Warning, "quorum", "see the findings of the nodes that do not vote",
			"%d of %d nodes vote now, %d needed: no lock can be acquired", r.voting(), total, r.Quorum)
	case r.votingForEveryKey() < r.Quorum:
		fs.add("", Warning, "quorum", "for slots that sit out, nothing: each one's delay starts at its next acquisition and keeps safe the locks it held before; for slots no master serves, restore the cluster",
			"%d of %d nodes vote now for every key, %d needed: a Redis Cluster node refuses the locks whose keys hash to a slot that sits out its recovery delay, or that no reachable master serves (see its findings); the others are taken",
			r.votingForEveryKey(), total, r.Quorum)
	case total > 1 && r.Reachable == r.Quorum && r.Reachable == total:
		fs.add("", Warning, "quorum", "use 3 or 5 independent masters, so that locking survives a node failure",
			"%d of %d nodes reachable, %d needed: every node is needed, one failure stops locking", r.Reachable, total, r.Quorum)
	case total > 1 && r.Reachable == r.Quorum:
		fs.add("", Warning, "quorum", back,
			"%d of %d nodes %s, %d needed: one more failure stops locking", r.Reachable, total, reachable, r.Quorum)
	}
	r.countFindings(fs)
}

// countFindings reports node counts that tolerate no failure, or no more
// than one node fewer would.
func (r *Report) countFindings(fs *findingList) {
	total := len(r.Nodes)
	switch {
	case total == 1 && (r.Nodes[0].SentinelManaged || r.Nodes[0].Cluster):
		fs.add("", Info, "quorum", "use 3 or 5 independent deployments to survive the loss of one",
			"one node: its failover survives the crash of a master, not the loss of the whole deployment or a failover that loses a lock (SAFETY.md)")
	case total == 1:
		fs.add("", Info, "quorum", "use 3 or 5 independent masters to survive a node failure",
			"one node: no fault tolerance")
	case total%2 == 0:
		fs.add("", Info, "quorum", fmt.Sprintf("use %d or %d nodes", total-1, total+1),
			"%d nodes tolerate no more failures than %d", total, total-1)
	}
}

// ttlFindings says which TTL the clients of the nodes can use: at most the
// recovery delay, while the restart quarantine is on.
func ttlFindings(fs *findingList, l Limits) {
	if !l.Quarantine {
		fs.add("", Info, "ttl", "nothing to do",
			"the restart quarantine is off: no recovery delay bounds the clients' TTLs")
		return
	}
	fs.add("", Info, "ttl",
		"for work longer than that, keep the TTL within it and renew the lock ('redlock run', WithAutoRenew, Do); "+
			"for a longer TTL, raise "+
			"--recovery-delay (Options.RecoveryDelay) on every client of these nodes together",
		"clients of these nodes can use a TTL of at most %s, the recovery delay (--recovery-delay) "+
			"for which a node that lost its data sits out", l.RecoveryDelay)
}

// isTimeout reports an error that means the node did not answer in time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// writesFindings reports a node that answers reads but takes no write: it
// votes in no acquisition, and frees no lock, until its writes resume.
func writesFindings(fs *findingList, n Node, _ Limits) {
	if !n.WritesStalled {
		return
	}
	fs.add(n.Node, Warning, "writes",
		"wait for the pause to end (CLIENT UNPAUSE ends it at once), or find what blocks the node (SLOWLOG GET, CLIENT LIST)",
		"answers reads but took no write within %s: it pauses writes (CLIENT PAUSE … WRITE, as before a failover) or is busy, "+
			"and grants, renews and releases no lock until its writes resume", NodeTimeout)
}

// functionsFindings reports a node that refuses the library's functions:
// the client runs its scripts there by EVALSHA, with every guarantee, at a
// higher cost to the node.
func functionsFindings(fs *findingList, n Node, _ Limits) {
	if n.functionsErr == nil {
		return
	}
	const cost = "the scripts run by EVALSHA instead, with every guarantee, but each acquisition costs the node more " +
		"(an INFO to read its run_id, and the scripts' functions defined again on every call)"
	if n.Version != "" && versionBelow(n.Version, 7, 0) {
		fs.add(n.Node, Info, "functions", "upgrade to Redis 7.0 or later to save the node that work",
			"Redis %s has no functions (FUNCTION LOAD, FCALL): %s", n.Version, cost)
		return
	}
	remedy := "allow this user FUNCTION LOAD and FCALL (+function|load +fcall), or set Options.DisableFunctions to keep the node's function libraries untouched"
	switch {
	case !strings.Contains(n.functionsErr.Error(), "unknown command"):
	case n.Version != "":
		remedy = "do not rename FUNCTION and FCALL away (rename-command), or set Options.DisableFunctions to keep the node's function libraries untouched"
	default:
		// Renamed away, or a release before 7.0 whose INFO went unread.
		remedy = "upgrade to Redis 7.0 or later if the node runs an older release; otherwise do not rename FUNCTION and FCALL away (rename-command)"
	}
	fs.add(n.Node, Info, "functions", remedy,
		"the library's functions are refused (%s): %s", shortErrText(n.functionsErr), cost)
}

package doctor

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/wire"
)

// Node is what an audit learned about one node. String fields are "" when
// the value is unknown: the node was unreachable, or refused the command
// that reports it.
type Node struct {
	// Node is the node's Conn.Name.
	Node string
	// Reachable reports whether the node answered any command.
	Reachable bool
	// Cluster reports a node that is a whole Redis Cluster. Its masters
	// are audited one by one, in Shards; when they cannot be listed, the
	// checks ran on whichever of its masters the client asked.
	Cluster bool
	// Shards holds, for a Redis Cluster node, the audit of each master that
	// serves slots, in slot order. The fields below that describe one
	// server (Version to MaxMemoryPolicy) are then unknown here, and the
	// quarantine fields sum up the shards' restart markers: Recovering while
	// every slot sits out, PartlyRecovering while some do. Nil for any
	// other node.
	Shards []Shard
	// Uncovered are the hash slots of a Redis Cluster node that no master
	// serves: locks whose keys hash there cannot be taken on it.
	Uncovered []SlotRange
	// Err is why the node is unreachable; nil when it is reachable.
	Err error
	// Version is redis_version from INFO: on Valkey, the Redis release it
	// is compatible with.
	Version string

	// ValkeyVersion is valkey_version from INFO: empty unless the server
	// is Valkey.
	ValkeyVersion string
	// RunID identifies the server process (INFO run_id). Two nodes with the
	// same RunID are the same server.
	RunID string
	// Role is "master", "replica" or "sentinel". A replica is not an
	// independent master, and a Sentinel holds no keys.
	Role string
	// Replicas is the number of replicas connected to a master.
	Replicas int
	// Uptime is how long the server process has run.
	Uptime time.Duration
	// RTT is the shortest round trip of a TIME command.
	RTT time.Duration
	// ClockOffset is the node's wall clock minus this host's, measured with
	// TIME and corrected for half the round trip; the error is at most RTT/2.
	// It is zero when unknown.
	ClockOffset time.Duration
	// ClockKnown reports whether ClockOffset was measured.
	ClockKnown bool
	// AppendOnly is the appendonly setting, "yes" or "no" (from INFO when
	// CONFIG GET is refused).
	AppendOnly string
	// AppendFsync is the appendfsync setting: "always", "everysec" or "no".
	AppendFsync string
	// Save is the RDB snapshot schedule, such as "3600 1 300 100", or "none"
	// when snapshots are off.
	Save string
	// MaxMemoryPolicy is the maxmemory-policy setting (from INFO when CONFIG
	// GET is refused).
	MaxMemoryPolicy string
	// UsedMemory and MaxMemory are INFO's used_memory and maxmemory, in
	// bytes; MaxMemory is 0 when there is no limit.
	UsedMemory, MaxMemory int64
	// SentinelManaged reports a node named through its Sentinels
	// (master_name): a master that a failover replaces.
	SentinelManaged bool
	// MinReplicasToWrite is the min-replicas-to-write setting; "" when
	// unknown.
	MinReplicasToWrite string
	// Loading reports a node still loading its data set from disk; it
	// refuses most commands until done.
	Loading bool
	// WritesStalled reports a node that answered reads but took no write
	// within the audit's time (its FUNCTION LOAD, or where it has no
	// functions its PUBLISH, timed out): its writes are paused (CLIENT
	// PAUSE … WRITE, as before a failover), or it is busy. It grants and
	// releases no lock until writes resume.
	WritesStalled bool
	// Recovering reports a node kept out of every quorum by the restart
	// quarantine: it has no restart marker (it restarted empty, or no
	// client has used it yet), or its marker is younger than the recovery
	// delay. Always false when the quarantine is off.
	Recovering bool
	// PartlyRecovering reports a Redis Cluster node some of whose slots,
	// not all, sit out their recovery delay, or will from their next
	// acquisition: it votes for the locks whose keys hash to its other
	// slots, not for those. Always false when the quarantine is off.
	PartlyRecovering bool
	// NoMarker reports a node without a restart marker.
	NoMarker bool
	// Restarted reports a node whose Redis process changed since its marker
	// was written: a restart, whatever it reloaded, or a failover.
	Restarted bool
	// RecoveringLeft is how long the node stays out, at most; for a node
	// without a marker, the full recovery delay from the next acquisition
	// that reaches it.
	RecoveringLeft time.Duration

	infoErr, timeErr, configErr, markerErr error
	// functionsErr is why the node refused the library's functions (see
	// checkFunctions); nil where it took them, or where the client runs
	// its scripts by EVALSHA anyway.
	functionsErr error
	// shardsErr is why the masters of a Redis Cluster node could not be
	// listed.
	shardsErr error
}

// probe runs the commands of every check but the quarantine's on one node,
// one after another, under one deadline. A node is reachable when any
// command succeeds; one that refuses all of them (NOAUTH, say) is
// unreachable, with the first refusal as its Err.
func probe(ctx context.Context, conn redlock.Conn) Node {
	ctx, cancel := context.WithTimeout(ctx, NodeTimeout)
	defer cancel()
	n := Node{Node: conn.Name()}
	if c, ok := conn.(interface{ IsCluster() bool }); ok {
		n.Cluster = c.IsCluster()
	}
	// Both adapters name a Sentinel-managed node MASTER@sentinel:ADDRS.
	n.SentinelManaged = strings.Contains(n.Node, "@sentinel:")

	start := time.Now()
	info, err := conn.Do(ctx, "INFO")
	infoRTT := time.Since(start)
	if err == nil {
		n.Reachable = true
		n.applyInfo(parseInfo(replyString(info)))
	} else {
		n.infoErr = err
	}

	if n.timeErr = n.measureClock(ctx, conn); n.timeErr != nil {
		n.RTT = infoRTT
	} else {
		n.Reachable = true
	}

	if n.configErr = n.readConfig(ctx, conn); n.configErr == nil {
		n.Reachable = true
	}
	if n.Reachable {
		n.functionsErr = checkFunctions(ctx, conn, n.Cluster)
		n.WritesStalled = writesStalled(ctx, conn, n.functionsErr)
		if isTimeout(n.functionsErr) {
			n.functionsErr = nil
		}
	}
	if !n.Reachable {
		n.Err, n.RTT = n.infoErr, 0
	}
	return n
}

// applyQuarantine takes each node's restart quarantine state from the
// client's Inspect, which decides "recovering" exactly as an acquisition
// does. The key inspected is one no lock uses; only the node-wide marker
// matters here. A Redis Cluster node audited shard by shard keeps the state
// of its slots' markers.
func applyQuarantine(ctx context.Context, client *redlock.Client, nodes []Node) {
	states, err := client.Inspect(ctx, "redlock-doctor")
	for i := range nodes {
		n := &nodes[i]
		if n.Shards != nil {
			continue // its restart markers are per slot, read with its shards
		}
		switch {
		case err != nil:
			n.markerErr = err
		case i >= len(states):
		case states[i].Err != nil:
			n.markerErr = states[i].Err
		default:
			s := states[i]
			n.Reachable = true
			n.NoMarker, n.Restarted, n.Recovering, n.RecoveringLeft = s.NoMarker, s.Restarted, s.Recovering, s.RecoveringLeft
		}
		if n.Reachable {
			n.Err = nil
		}
	}
}

// applyInfo takes the fields of an INFO reply.
func (n *Node) applyInfo(f map[string]string) {
	n.Version = f["redis_version"]
	n.ValkeyVersion = f["valkey_version"]
	n.RunID = f["run_id"]
	switch {
	case f["redis_mode"] == "sentinel", f["server_mode"] == "sentinel": // Valkey says server_mode
		n.Role = "sentinel"
	case f["role"] == "master":
		n.Role = "master"
	case f["role"] == "slave", f["role"] == "replica":
		n.Role = "replica"
	}
	n.Replicas, _ = strconv.Atoi(f["connected_slaves"])
	if s, err := strconv.ParseInt(f["uptime_in_seconds"], 10, 64); err == nil {
		n.Uptime = time.Duration(s) * time.Second
	}
	switch f["aof_enabled"] {
	case "0":
		n.AppendOnly = "no"
	case "1":
		n.AppendOnly = "yes"
	}
	n.MaxMemoryPolicy = f["maxmemory_policy"]
	n.UsedMemory, _ = strconv.ParseInt(f["used_memory"], 10, 64)
	n.MaxMemory, _ = strconv.ParseInt(f["maxmemory"], 10, 64)
	n.Loading = f["loading"] == "1"
}

// measureClock sends TIME timeSamples times and keeps the sample with the
// shortest round trip.
//
// The offset compares wall clocks on purpose: TIME is the node's wall clock,
// the one Redis expires keys by, and what can be wrong with it (a step, an
// unsynchronised clock) is what the check looks for. The monotonic clock only
// measures the round trip.
func (n *Node) measureClock(ctx context.Context, conn redlock.Conn) error {
	best := time.Duration(-1)
	for range timeSamples {
		t0 := time.Now()
		v, err := conn.Do(ctx, "TIME")
		rtt := time.Since(t0)
		if err != nil {
			return err
		}
		server, err := parseTime(v)
		if err != nil {
			return err
		}
		if best < 0 || rtt < best {
			best = rtt
			// Round(0) drops the monotonic reading, so Sub compares wall clocks.
			n.ClockOffset = server.Sub(t0.Round(0).Add(rtt / 2))
		}
	}
	n.RTT, n.ClockKnown = best, true
	return nil
}

// readConfig reads the persistence and eviction settings, one CONFIG GET per
// parameter so that servers older than 7.0 answer too. It stops at the first
// refusal.
func (n *Node) readConfig(ctx context.Context, conn redlock.Conn) error {
	for _, p := range []struct {
		name string
		dst  *string
	}{
		{"appendonly", &n.AppendOnly},
		{"appendfsync", &n.AppendFsync},
		{"maxmemory-policy", &n.MaxMemoryPolicy},
		{"save", &n.Save},
		{"min-replicas-to-write", &n.MinReplicasToWrite},
	} {
		v, err := conn.Do(ctx, "CONFIG", "GET", p.name)
		if err != nil {
			return err
		}
		val, ok := configValue(v, p.name)
		if !ok {
			continue // hidden from this user, or unknown to this version
		}
		if p.name == "save" && val == "" {
			val = "none"
		}
		*p.dst = val
	}
	return nil
}

// MasterUnknown reports a Sentinel-managed node whose Sentinels answered
// but know no master by its URL's master_name: a configuration error, as
// each client library reports it in its own words.
func (n Node) MasterUnknown() bool {
	return n.Err != nil && strings.Contains(strings.ToLower(n.Err.Error()), "no such master")
}

// QuarantineUnknown reports a reachable node whose restart marker could
// not be read (an ACL without the library's scripts, say): whether it sits
// out a recovery delay is unknown, and Recovering says nothing.
func (n Node) QuarantineUnknown() bool {
	return n.Reachable && n.markerErr != nil && n.Shards == nil
}

// CredentialsRefused reports a node that answered but refused the
// connection's credentials, or asked for some (WRONGPASS, NOAUTH): it runs
// and is reached, but cannot vote with this configuration.
func (n Node) CredentialsRefused() bool {
	if n.Err == nil {
		return false
	}
	msg := n.Err.Error()
	return strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "NOAUTH")
}

// writesStalled reports whether a node that answered the reads above in
// time holds its writers back: functionsErr, the answer to FUNCTION LOAD
// (a write), timed out, or, where the node refused it (Redis 6.2, an
// ACL), a PUBLISH on a channel nobody listens on, which a write pause
// holds back too, times out.
func writesStalled(ctx context.Context, conn redlock.Conn, functionsErr error) bool {
	if functionsErr == nil || isTimeout(functionsErr) {
		return functionsErr != nil
	}
	_, err := conn.Do(ctx, "PUBLISH", wire.ReleaseChannelPrefix+"doctor", "")
	return isTimeout(err)
}

// checkFunctions loads the library's scripts as a function library on the
// node (FUNCTION LOAD), as a client's first call does, and returns the
// node's refusal: Redis before 7.0 has no functions, and an ACL may refuse
// FUNCTION or FCALL. The client then runs its scripts by EVALSHA, which
// costs the node more per call. It returns nil where the client would not
// call functions anyway: over a Conn without FCall, or on a Redis Cluster.
func checkFunctions(ctx context.Context, conn redlock.Conn, cluster bool) error {
	if _, ok := conn.(redlock.FunctionCaller); !ok || cluster {
		return nil
	}
	if _, err := conn.Do(ctx, "FUNCTION", "LOAD", wire.Library); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	// FCALL of a function no library has: refused by an ACL without FCALL,
	// "not found" otherwise.
	_, err := conn.Do(ctx, "FCALL", wire.LibraryPrefix+"doctor_probe", "0")
	if err != nil && !strings.Contains(err.Error(), "Function not found") {
		return err
	}
	return nil
}

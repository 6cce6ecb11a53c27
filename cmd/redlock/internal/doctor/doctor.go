// Package doctor audits the nodes of a lock deployment for the settings and
// states that make locks unsafe or unavailable: reachability and the
// majority, the Redis version, replicas, eviction, persistence, clocks, the
// restart quarantine and servers listed twice; and it says the largest TTL
// the clients can use. A node that is a Redis Cluster is audited master by
// master, with its cluster state, its slot coverage and the restart marker
// of every slot. It is what `redlock doctor` prints. It is read-only: it
// writes nothing to the nodes.
package doctor

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlock-go/redlock"
)

// Audit timing.
const (
	// NodeTimeout bounds the inspection of one node, all its commands
	// together. An audit is a diagnostic, not a lock operation, so it waits
	// far longer than a lock's per-node timeout for a slow or distant node;
	// a node that needs more than this is reported unreachable, which is how
	// a lock operation would see it too. Give the Client passed to Audit
	// this per-node timeout, so that its inspection waits as long.
	NodeTimeout = 3 * time.Second
	// timeSamples is how many TIME round trips measure a node's clock. The
	// shortest one is used: the error of the offset is at most half its
	// round trip, so more samples tighten it, at one round trip each.
	timeSamples = 3
)

// Limits are the lock settings the findings are judged by: those of the
// clients that use the nodes.
type Limits struct {
	// TTL is the lock time-to-live in use.
	TTL time.Duration
	// DriftAllowance is the clock-drift allowance for TTL (with the
	// library's defaults, TTL/100 + 2ms): a node clock further off than
	// this expires locks early.
	DriftAllowance time.Duration
	// Quarantine reports that the restart quarantine is on.
	Quarantine bool
	// RecoveryDelay is how long a node that lost its data sits out.
	RecoveryDelay time.Duration
	// WaitReplicas is how many replicas must confirm a grant
	// (Options.WaitReplicas); 0 when grants do not wait.
	WaitReplicas int
	// shard: the findings are about a master of a Redis Cluster, whose
	// client cannot wait for replicas (WaitReplicas is refused there).
	shard bool
}

// Severity ranks a Finding.
type Severity uint8

// The severities, from least to most serious.
const (
	// Info is worth knowing; nothing to fix.
	Info Severity = iota
	// Warning weakens safety or availability under some failure, or is a
	// limit the operator should know about.
	Warning
	// Critical breaks the safety of locks, or their availability, now.
	// Report.Unsafe reports any.
	Critical
)

// String returns "info", "warning" or "critical".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	default:
		return "severity(" + strconv.Itoa(int(s)) + ")"
	}
}

// Finding is one result of an audit: what was found, on which node, and what
// to do about it.
type Finding struct {
	// Node is the node's Conn.Name, or "" for a finding about the nodes as a
	// whole (duplicates, quorum).
	Node string
	// Shard names the master of a Redis Cluster node that the finding is
	// about, by its address and slots (Shard.Name); "" for a finding about
	// a whole node.
	Shard    string
	Severity Severity
	// Check names the check that produced the finding: "unreachable",
	// "credentials", "version", "replica", "eviction", "persistence", "config", "clock",
	// "recovering", "cluster", "duplicate", "quorum", "nodes" (the list
	// refused as a whole, for what no other check names) or "ttl" (the largest
	// TTL the clients can use).
	Check string
	// Message says what was found, in one line.
	Message string
	// Remedy says what to do about it, in one line.
	Remedy string
}

// String returns the finding on one line: severity, check, node (and
// shard), message and remedy.
func (f Finding) String() string {
	node := f.Node
	if node == "" {
		node = "all nodes"
	}
	if f.Shard != "" {
		node += " shard " + f.Shard
	}
	s := fmt.Sprintf("%s %s %s: %s", f.Severity, f.Check, node, f.Message)
	if f.Remedy != "" {
		s += " (" + f.Remedy + ")"
	}
	return s
}

// Report is the result of Audit.
type Report struct {
	// Nodes holds one Node per node, in the order given.
	Nodes []Node
	// Findings are sorted from most to least severe, then in node order.
	Findings []Finding
	// Quorum is how many nodes must agree: N/2+1.
	Quorum int
	// Reachable is how many nodes answered.
	Reachable int
}

// Unsafe reports whether any finding is Critical: locks taken on these nodes
// now can be held by two clients at once, or cannot be taken.
func (r *Report) Unsafe() bool {
	for _, f := range r.Findings {
		if f.Severity == Critical {
			return true
		}
	}
	return false
}

// Audit inspects every node at once and reports what threatens the safety or
// availability of locks: reachability, version, role (a replica is not an
// independent master), persistence (appendonly, appendfsync, save), a
// maxmemory-policy that can evict keys with a TTL, the clock offset against
// this host, the restart quarantine, and whether two nodes are the same
// server (by run_id). A node that is a Redis Cluster, through a goredis
// Conn, is audited master by master (see Node.Shards): each master gets
// the checks of a standalone server, its cluster_state and the restart
// markers of its slots are read, and slots that no master serves are
// reported. conns are the nodes; client is a Client over them,
// whose Inspect reads the quarantine state (give it NodeTimeout as its
// per-node timeout). The clock offset is judged against
// limits.DriftAllowance, the quarantine against limits.RecoveryDelay.
//
// Audit blocks until every node answered or gave up, at most NodeTimeout
// after ctx allows. A node that cannot be reached, or refuses a command
// (managed services often refuse CONFIG GET), is a finding with the values
// it would have given left unknown, not an error: Audit fails only when ctx
// ends first, with an error wrapping ctx's.
func Audit(ctx context.Context, client *redlock.Client, conns []redlock.Conn, limits Limits) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	r := &Report{Nodes: make([]Node, len(conns)), Quorum: len(conns)/2 + 1}
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Go(func() { r.Nodes[i] = inspect(ctx, conn, limits) })
	}
	wg.Wait()
	if limits.Quarantine {
		applyQuarantine(ctx, client, r.Nodes)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	for _, n := range r.Nodes {
		if n.Reachable {
			r.Reachable++
		}
	}
	r.Findings = r.findings(limits)
	return r, nil
}

// The library's defaults, for the fields of redlock.Options left zero.
const (
	libraryTTL           = 10 * time.Second
	libraryDriftFactor   = 0.01
	libraryDriftConstant = 2 * time.Millisecond
	libraryRecovery      = 30 * time.Second
)

// LimitsOf returns the limits of clients built with opts, with the library's
// defaults (documented on redlock.Options) for the fields left zero.
func LimitsOf(opts redlock.Options) Limits {
	l := Limits{TTL: opts.TTL, Quarantine: !opts.DisableQuarantine, RecoveryDelay: opts.RecoveryDelay, WaitReplicas: opts.WaitReplicas}
	if l.TTL == 0 {
		l.TTL = libraryTTL
	}
	if l.RecoveryDelay == 0 {
		l.RecoveryDelay = libraryRecovery
	}
	factor := opts.DriftFactor
	if factor == 0 {
		factor = libraryDriftFactor
	}
	l.DriftAllowance = time.Duration(float64(l.TTL)*factor) + libraryDriftConstant
	return l
}

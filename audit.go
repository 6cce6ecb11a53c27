package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Audit timing.
const (
	// auditNodeTimeout bounds the inspection of one node, all its commands
	// together. An audit is a diagnostic, not a lock operation, so it waits
	// far longer than NodeTimeout for a slow or distant node; a node that
	// needs more than this is reported unreachable, which is how a lock
	// operation would see it too.
	auditNodeTimeout = 3 * time.Second
	// auditTimeSamples is how many TIME round trips measure a node's clock.
	// The shortest one is used: the error of the offset is at most half its
	// round trip, so more samples tighten it, at one round trip each.
	auditTimeSamples = 3
)

// Severity ranks a Finding.
type Severity uint8

// The severities, from least to most serious.
const (
	// SeverityInfo is worth knowing; nothing to fix.
	SeverityInfo Severity = iota
	// SeverityWarning weakens safety or availability under some failure, or
	// is a limit the operator should know about.
	SeverityWarning
	// SeverityCritical breaks the safety of locks, or their availability,
	// now. AuditReport.Unsafe reports any.
	SeverityCritical
)

// String returns "info", "warning" or "critical".
func (s Severity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityCritical:
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
	Node     string
	Severity Severity
	// Check names the check that produced the finding: "unreachable",
	// "version", "replica", "eviction", "persistence", "config", "clock",
	// "recovering", "duplicate" or "quorum".
	Check string
	// Message says what was found, in one line.
	Message string
	// Remedy says what to do about it, in one line.
	Remedy string
}

// String returns the finding on one line: severity, check, node, message and
// remedy.
func (f Finding) String() string {
	node := f.Node
	if node == "" {
		node = "all nodes"
	}
	s := fmt.Sprintf("%s %s %s: %s", f.Severity, f.Check, node, f.Message)
	if f.Remedy != "" {
		s += " (" + f.Remedy + ")"
	}
	return s
}

// NodeAudit is what an audit learned about one node. String fields are ""
// when the value is unknown: the node was unreachable, or refused the command
// that reports it.
type NodeAudit struct {
	// Node is the node's Conn.Name.
	Node string
	// Reachable reports whether the node answered any command.
	Reachable bool
	// Err is why the node is unreachable; nil when it is reachable.
	Err error
	// Version is redis_version from INFO.
	Version string
	// RunID identifies the server process (INFO run_id). Two nodes with the
	// same RunID are the same server.
	RunID string
	// Role is "master" or "replica". A replica is not an independent master.
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
	// Loading reports a node still loading its data set from disk; it
	// refuses most commands until done.
	Loading bool
	// Recovering reports a node kept out of every quorum by the restart
	// quarantine: it has no MarkerKey (it restarted empty, or no client has
	// used it yet), or its marker is younger than Options.RecoveryDelay.
	// Always false with Options.DisableQuarantine.
	Recovering bool
	// RecoveringLeft is how long the node stays out, at most; for a node
	// without a marker, the full recovery delay from the next acquisition
	// that reaches it.
	RecoveringLeft time.Duration

	infoErr, timeErr, configErr, markerErr error
	marker                                 string // "" when absent or unknown
}

// AuditReport is the result of Client.Audit.
type AuditReport struct {
	// Nodes holds one NodeAudit per node, in client order.
	Nodes []NodeAudit
	// Findings are sorted from most to least severe, then in node order.
	Findings []Finding
	// Quorum is how many nodes must agree: N/2+1.
	Quorum int
	// Reachable is how many nodes answered.
	Reachable int
}

// Unsafe reports whether any finding is SeverityCritical: locks taken on
// these nodes now can be held by two clients at once, or cannot be taken.
func (r *AuditReport) Unsafe() bool {
	for _, f := range r.Findings {
		if f.Severity == SeverityCritical {
			return true
		}
	}
	return false
}

// Audit inspects every node at once and reports what threatens the safety or
// availability of locks: reachability, version, role (a replica is not an
// independent master), persistence (appendonly, appendfsync, save), a
// maxmemory-policy that can evict keys with a TTL, the clock offset against
// this host, the restart quarantine (MarkerKey), and whether two nodes are the
// same server (by run_id). The clock offset is judged against the drift
// allowance of Options.TTL, the quarantine against Options.RecoveryDelay. It
// is read-only: it writes nothing to the nodes.
//
// Audit blocks until every node answered or gave up, at most a few seconds
// (auditNodeTimeout) after ctx allows. A node that cannot be reached, or
// refuses a command (managed services often refuse CONFIG GET), is a finding
// with the values it would have given left unknown, not an error: Audit
// fails only when ctx ends first, with an error wrapping ctx's.
func (c *Client) Audit(ctx context.Context) (*AuditReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redlock: audit: %w", err)
	}
	l := auditLimits{
		allowance:  drift(c.opts.TTL, c.opts.DriftFactor),
		ttl:        c.opts.TTL,
		quarantine: !c.opts.DisableQuarantine,
		delay:      c.opts.RecoveryDelay,
	}
	r := &AuditReport{Nodes: make([]NodeAudit, len(c.conns)), Quorum: c.quorum}
	var wg sync.WaitGroup
	for i, conn := range c.conns {
		wg.Go(func() { r.Nodes[i] = auditNode(ctx, conn, l) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redlock: audit: %w", err)
	}
	for _, n := range r.Nodes {
		if n.Reachable {
			r.Reachable++
		}
	}
	r.Findings = r.findings(l)
	return r, nil
}

// auditLimits are the client's settings the findings are judged by.
type auditLimits struct {
	allowance  time.Duration // drift allowance for ttl
	ttl        time.Duration // Options.TTL
	quarantine bool          // the restart quarantine is on
	delay      time.Duration // Options.RecoveryDelay
}

// auditNode runs every check's commands on one node, one after another, under
// one deadline. A node is reachable when any command succeeds; one that
// refuses all of them (NOAUTH, say) is unreachable, with the first refusal as
// its Err.
func auditNode(ctx context.Context, conn Conn, l auditLimits) NodeAudit {
	ctx, cancel := context.WithTimeout(ctx, auditNodeTimeout)
	defer cancel()
	n := NodeAudit{Node: conn.Name()}

	start := time.Now()
	info, err := conn.Do(ctx, "INFO")
	infoRTT := time.Since(start)
	if err == nil {
		n.Reachable = true
		n.applyInfo(parseAuditInfo(auditString(info)))
	} else {
		n.infoErr = err
	}

	serverNow, err := n.measureClock(ctx, conn)
	if err != nil {
		n.timeErr = err
		n.RTT = infoRTT
	} else {
		n.Reachable = true
	}

	n.configErr = n.readConfig(ctx, conn)
	if n.configErr == nil {
		n.Reachable = true
	}

	if l.quarantine {
		marker, err := conn.Do(ctx, "GET", MarkerKey)
		if err == nil {
			n.Reachable = true
			n.marker = auditString(marker)
			n.applyMarker(serverNow, l.delay)
		} else {
			n.markerErr = err
		}
	}

	if !n.Reachable {
		n.Err, n.RTT = n.infoErr, 0
	}
	return n
}

// applyInfo takes the fields of an INFO reply.
func (n *NodeAudit) applyInfo(f map[string]string) {
	n.Version = f["redis_version"]
	n.RunID = f["run_id"]
	switch f["role"] {
	case "master":
		n.Role = "master"
	case "slave", "replica":
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
	n.Loading = f["loading"] == "1"
}

// measureClock sends TIME auditTimeSamples times and keeps the sample with the
// shortest round trip. It returns the node's time at that sample.
//
// The offset compares wall clocks on purpose: TIME is the node's wall clock,
// the one Redis expires keys by, and what can be wrong with it (a step, an
// unsynchronised clock) is what the check looks for. The monotonic clock only
// measures the round trip.
func (n *NodeAudit) measureClock(ctx context.Context, conn Conn) (serverNow time.Time, err error) {
	best := time.Duration(-1)
	for range auditTimeSamples {
		t0 := time.Now()
		v, err := conn.Do(ctx, "TIME")
		rtt := time.Since(t0)
		if err != nil {
			return time.Time{}, err
		}
		server, err := parseAuditTime(v)
		if err != nil {
			return time.Time{}, err
		}
		if best < 0 || rtt < best {
			best = rtt
			// Round(0) drops the monotonic reading, so Sub compares wall clocks.
			n.ClockOffset = server.Sub(t0.Round(0).Add(rtt / 2))
			serverNow = server
		}
	}
	n.RTT, n.ClockKnown = best, true
	return serverNow, nil
}

// readConfig reads the persistence and eviction settings, one CONFIG GET per
// parameter so that servers older than 7.0 answer too. It stops at the first
// refusal.
func (n *NodeAudit) readConfig(ctx context.Context, conn Conn) error {
	for _, p := range []struct {
		name string
		dst  *string
	}{
		{"appendonly", &n.AppendOnly},
		{"appendfsync", &n.AppendFsync},
		{"maxmemory-policy", &n.MaxMemoryPolicy},
		{"save", &n.Save},
	} {
		v, err := conn.Do(ctx, "CONFIG", "GET", p.name)
		if err != nil {
			return err
		}
		val, ok := auditConfigValue(v, p.name)
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

// applyMarker works out the restart quarantine from the marker key's value
// and the node's time.
func (n *NodeAudit) applyMarker(serverNow time.Time, delay time.Duration) {
	switch {
	case n.marker == "":
		n.Recovering, n.RecoveringLeft = true, delay
	case n.marker == "0":
	default:
		us, err := strconv.ParseInt(n.marker, 10, 64)
		if err != nil {
			n.markerErr = fmt.Errorf("marker %q is not a time in microseconds", n.marker)
			return
		}
		if serverNow.IsZero() {
			return // TIME refused: the marker's age is unknown
		}
		if left := delay - serverNow.Sub(time.UnixMicro(us)); left > 0 {
			n.Recovering, n.RecoveringLeft = true, min(left, delay)
		}
	}
}

// findings turns the node audits into findings, most severe first. allowance
// is the drift allowance for the client's TTL.
func (r *AuditReport) findings(l auditLimits) []Finding {
	var fs []Finding
	add := func(node string, sev Severity, check, remedy, format string, args ...any) {
		fs = append(fs, Finding{Node: node, Severity: sev, Check: check, Message: fmt.Sprintf(format, args...), Remedy: remedy})
	}
	usable := 0
	for _, n := range r.Nodes {
		if n.Reachable && !n.Recovering && !n.Loading && n.Role != "replica" {
			usable++
		}
	}
	recoveringSev := SeverityInfo
	if r.Reachable >= r.Quorum && usable < r.Quorum {
		recoveringSev = SeverityWarning
	}
	for _, n := range r.Nodes {
		if !n.Reachable {
			why := auditErrText(n.Err)
			if isTimeout(n.Err) {
				why = fmt.Sprintf("no answer within %s", auditNodeTimeout)
			}
			add(n.Node, SeverityWarning, "unreachable",
				"check that the server runs and that this host can reach it", "unreachable: %s", why)
			continue
		}
		auditNodeFindings(n, l, recoveringSev, add)
	}

	byRunID := map[string][]string{}
	var runIDs []string
	for _, n := range r.Nodes {
		if n.Reachable && n.RunID != "" {
			if byRunID[n.RunID] == nil {
				runIDs = append(runIDs, n.RunID)
			}
			byRunID[n.RunID] = append(byRunID[n.RunID], n.Node)
		}
	}
	for _, id := range runIDs {
		if names := byRunID[id]; len(names) > 1 {
			add("", SeverityCritical, "duplicate",
				"list each server once: one server must not vote more than once",
				"%s are the same server (run_id %s)", strings.Join(names, ", "), id)
		}
	}

	total := len(r.Nodes)
	switch {
	case r.Reachable < r.Quorum:
		add("", SeverityCritical, "quorum", "bring nodes back, or point the client at reachable ones",
			"%d of %d nodes reachable, %d needed: no lock can be acquired", r.Reachable, total, r.Quorum)
	case total > 1 && r.Reachable == r.Quorum:
		add("", SeverityWarning, "quorum", "bring the unreachable nodes back",
			"%d of %d nodes reachable, %d needed: one more failure stops locking", r.Reachable, total, r.Quorum)
	}
	switch {
	case total == 1:
		add("", SeverityInfo, "quorum", "use 3 or 5 independent masters to survive a node failure",
			"one node: no fault tolerance")
	case total%2 == 0:
		add("", SeverityInfo, "quorum", fmt.Sprintf("use %d or %d nodes", total-1, total+1),
			"%d nodes tolerate no more failures than %d", total, total-1)
	}
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(b.Severity, a.Severity) })
	return fs
}

// auditNodeFindings adds the findings about one reachable node.
func auditNodeFindings(n NodeAudit, l auditLimits, recoveringSev Severity,
	add func(node string, sev Severity, check, remedy, format string, args ...any)) {
	name := n.Node

	switch {
	case n.infoErr != nil:
		add(name, SeverityInfo, "version", "allow INFO for this user to check version, role and run_id",
			"INFO refused (%s): version, role and run_id unknown", auditErrText(n.infoErr))
	case n.Version == "":
		add(name, SeverityInfo, "version", "", "INFO has no redis_version: not a Redis server, or a proxy")
	case auditVersionBelow(n.Version, 2, 6, 12):
		add(name, SeverityCritical, "version", "upgrade Redis: locks need SET NX PX and Lua scripts (2.6.12+)",
			"Redis %s is too old for locks", n.Version)
	}

	switch {
	case n.Role == "replica":
		add(name, SeverityCritical, "replica", "point the client at independent masters only, with no replication between them",
			"a replica, not an independent master: it refuses lock writes or loses them at the next sync")
	case n.Replicas > 0:
		add(name, SeverityWarning, "replica", "turn off automatic failover for lock nodes, or run them without replicas",
			"master with %d replica(s): a failover can promote a replica that never received a lock key", n.Replicas)
	}

	switch p := n.MaxMemoryPolicy; {
	case p == "" || p == "noeviction":
	case strings.HasPrefix(p, "volatile-") || strings.HasPrefix(p, "allkeys-"):
		add(name, SeverityCritical, "eviction", "set maxmemory-policy noeviction, in redis.conf too",
			"maxmemory-policy %s can evict lock keys, which carry a TTL", p)
	default:
		add(name, SeverityWarning, "eviction", "set maxmemory-policy noeviction, in redis.conf too",
			"unrecognised maxmemory-policy %s may evict lock keys", p)
	}

	// Without durable writes a restarted node can grant a lock still held
	// elsewhere; the quarantine covers that, and without it nothing does.
	persistSev, persistRemedy := SeverityWarning,
		"keep the restart quarantine on, so that a node without its marker key sits out the recovery delay, or set appendfsync always"
	if !l.quarantine {
		persistSev, persistRemedy = SeverityCritical,
			"set appendonly yes and appendfsync always, or turn the restart quarantine back on (Options.DisableQuarantine false)"
	}
	switch {
	case n.AppendOnly == "no":
		add(name, persistSev, "persistence", persistRemedy,
			"appendonly no: after a restart the node has forgotten the locks it granted")
	case n.AppendOnly == "yes" && n.AppendFsync != "" && n.AppendFsync != "always":
		add(name, persistSev, "persistence", persistRemedy,
			"appendfsync %s: a crash loses the locks granted in the last moments before it", n.AppendFsync)
	case n.AppendOnly == "" || n.AppendFsync == "":
		add(name, SeverityInfo, "persistence", persistRemedy,
			"persistence unknown: cannot tell whether granted locks survive a crash")
	}

	if n.configErr != nil {
		var unknown []string
		for _, f := range []struct{ name, val string }{
			{"appendonly", n.AppendOnly}, {"appendfsync", n.AppendFsync},
			{"maxmemory-policy", n.MaxMemoryPolicy}, {"save", n.Save},
		} {
			if f.val == "" {
				unknown = append(unknown, f.name)
			}
		}
		add(name, SeverityInfo, "config", "check these settings with the provider: locks need maxmemory-policy noeviction",
			"CONFIG GET refused (%s): %s unknown", auditErrText(n.configErr), strings.Join(unknown, ", "))
	}

	switch {
	case !n.ClockKnown:
		add(name, SeverityInfo, "clock", "allow TIME for this user to check the node's clock",
			"TIME refused (%s): clock offset unknown", auditErrText(n.timeErr))
	case n.ClockOffset.Abs()-n.RTT/2 > l.allowance:
		add(name, SeverityCritical, "clock", "synchronise the node's clock with NTP, slewing rather than stepping",
			"clock %s off this host's (±%s), beyond the %s drift allowance for a %s TTL: a clock that steps expires locks early",
			n.ClockOffset.Round(time.Microsecond), (n.RTT / 2).Round(time.Microsecond), l.allowance, l.ttl)
	}

	switch {
	case n.Role == "replica":
		// Never part of a quorum: the replica finding says it all.
	case n.Loading:
		add(name, recoveringSev, "recovering", "wait until the node has loaded its data",
			"loading its data set: it refuses lock commands until done")
	case n.markerErr != nil:
		add(name, SeverityInfo, "recovering", "allow GET of "+MarkerKey+" for this user",
			"restart marker unreadable (%s): quarantine state unknown", auditErrText(n.markerErr))
	case n.Recovering && n.marker == "":
		add(name, recoveringSev, "recovering", "wait; for a new deployment with no lock outstanding, Client.MarkReady",
			"no restart marker (restarted empty, or never used): it sits out %s from the next acquisition", n.RecoveringLeft.Round(time.Second))
	case n.Recovering:
		add(name, recoveringSev, "recovering", "wait: MarkReady is safe only when no lock can be outstanding",
			"restarted: out of every quorum for %s more", n.RecoveringLeft.Round(time.Millisecond))
	}
}

// parseAuditInfo splits an INFO reply into its fields.
func parseAuditInfo(info string) map[string]string {
	f := map[string]string{}
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	return f
}

// parseAuditTime decodes a TIME reply: seconds and microseconds.
func parseAuditTime(v any) (time.Time, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return time.Time{}, fmt.Errorf("unexpected TIME reply %v", v)
	}
	sec, err1 := strconv.ParseInt(auditString(a[0]), 10, 64)
	usec, err2 := strconv.ParseInt(auditString(a[1]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return time.Time{}, fmt.Errorf("unexpected TIME reply %v: %w", v, err)
	}
	return time.Unix(sec, usec*int64(time.Microsecond)), nil
}

// auditConfigValue finds name's value in a CONFIG GET reply, which is a flat
// array under RESP2 and a map under RESP3.
func auditConfigValue(v any, name string) (string, bool) {
	switch r := v.(type) {
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if auditString(r[i]) == name {
				return auditString(r[i+1]), true
			}
		}
	case map[string]any:
		if val, ok := r[name]; ok {
			return auditString(val), true
		}
	case map[any]any:
		if val, ok := r[name]; ok {
			return auditString(val), true
		}
	}
	return "", false
}

// auditString renders a reply element as a string.
func auditString(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case []byte:
		return string(s)
	default:
		return fmt.Sprint(s)
	}
}

// auditVersionBelow reports whether version (such as "7.0.15") is known to be
// older than major.minor.patch.
func auditVersionBelow(version string, want ...int) bool {
	parts := strings.Split(version, ".")
	for i, w := range want {
		if i >= len(parts) {
			return false
		}
		got, err := strconv.Atoi(parts[i])
		if err != nil || got != w {
			return err == nil && got < w
		}
	}
	return false
}

// auditErrText is err's text on one line, as error replies can end in spaces
// or carry newlines.
func auditErrText(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

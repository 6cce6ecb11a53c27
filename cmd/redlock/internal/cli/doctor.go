package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/cmd/redlock/internal/doctor"
	"github.com/redlock-go/redlock/cmd/redlock/internal/observe"
	"github.com/redlock-go/redlock/goredis"
)

func doctorCommand() *command {
	return &command{
		name:       "doctor",
		jsonReport: true,
		synopsis:   "[flags]",
		summary:    "audit the nodes for settings that make locks unsafe",
		about: `
Inspects every node, changing nothing a lock depends on (it loads the
library's Redis functions where they are missing, as any client of the
library does), and prints a table with one row per node,
then one line per finding with its remedy, most severe first. It checks:
reachability, credentials and the majority, the Redis version, that each node is an
independent master, persistence (appendonly, appendfsync), a maxmemory-policy
that can evict lock keys, the node's clock against this host's (beyond the
drift allowance of --ttl, expiry is no longer trustworthy), the restart
quarantine, and nodes listed twice or reaching the same server twice. An
info finding says the largest TTL the clients of the nodes can use: the
--recovery-delay given (raise it on every client together for a longer one,
or renew a shorter TTL, as 'redlock run' does).

A Redis Cluster node (?cluster) is audited master by master, each named by
its address and slots: the checks above on each master, its cluster_state,
slots that no master serves, and the restart markers of its slots (a
master restarted or promoted sits out slot by slot; a new cluster's slots
are unmarked until 'redlock init'); its row says "some slots unserved"
while a master is down or slots have none. A Sentinel-managed node
(?master_name) is also checked for what its failovers need: a replica to
promote, and min-replicas-to-write, without which an old master cut off
from the Sentinels keeps granting locks the promoted one never sees.

A critical finding makes locks unsafe or impossible now; warnings weaken them
under some failure.

Output: the table and findings; with --json one object: {"unsafe", "available", "quorum",
"reachable", "nodes": [...], "findings": [{"node", "shard", "severity",
"check", "message", "remedy"}]}; a Redis Cluster node has "shards": [...].
"available" says whether a lock can be taken now: a majority votes (a
Redis Cluster whose masters say cluster_state fail votes for no key), and
the node list is one the other verbs accept (no node twice, no node that
refuses its URL, no replica or Sentinel named as a node).`,
		exits: []exitDoc{
			{"0", "no finding makes locks unsafe, and a majority votes now (warnings may remain)"},
			{code(exitFailure), "a critical finding: eviction policy, a node listed twice, credentials refused, an unreachable majority, a clock beyond the drift allowance, a replica, ..."},
			{code(exitUnavailable), "safe, but no lock can be taken now: too few nodes vote (recovering, loading, writes paused); on a brand-new deployment, run 'redlock init'"},
			docUsage,
			{code(exitConfig), "a node URL that does not parse (a node listed twice or refusing its credentials is a critical finding: 1)"},
			docInterrupted,
		},
		setup: setupDoctor,
	}
}

// auditNodeJSON is one node in doctor's JSON output.
type auditNodeJSON struct {
	Node            string  `json:"node"`
	Reachable       bool    `json:"reachable"`
	Error           string  `json:"error,omitempty"`
	Version         string  `json:"version,omitempty"`
	ValkeyVersion   string  `json:"valkey_version,omitempty"`
	Role            string  `json:"role,omitempty"`
	AppendOnly      string  `json:"appendonly,omitempty"`
	AppendFsync     string  `json:"appendfsync,omitempty"`
	MaxMemoryPolicy string  `json:"maxmemory_policy,omitempty"`
	ClockOffsetMs   float64 `json:"clock_offset_ms"`
	ClockKnown      bool    `json:"clock_known"`
	RTTMs           float64 `json:"rtt_ms"`
	Recovering      bool    `json:"recovering"`
	WritesStalled   bool    `json:"writes_stalled,omitempty"` // answers reads, takes no write (CLIENT PAUSE WRITE)
	// QuarantineUnknown: the restart marker could not be read, so
	// "recovering" says nothing of the node.
	QuarantineUnknown bool  `json:"quarantine_unknown,omitempty"`
	PartlyRecovering  bool  `json:"partly_recovering,omitempty"` // some slots of a Redis Cluster node sit out
	RecoveringLeftMs  int64 `json:"recovering_left_ms"`
	UptimeSeconds     int64 `json:"uptime_s"`
	ConnectedReplicas int   `json:"replicas"`
	Cluster           bool  `json:"cluster,omitempty"`
	// UncoveredSlots are the slots no master of a Redis Cluster serves.
	UncoveredSlots []string `json:"uncovered_slots,omitempty"`
	// SlotsUnserved: some slots of a Redis Cluster node have no reachable
	// master that serves them now (see doctor.Node.SlotsUnserved).
	SlotsUnserved bool        `json:"slots_unserved,omitempty"`
	Shards        []shardJSON `json:"shards,omitempty"`
}

// shardJSON is one master of a Redis Cluster node in doctor's JSON output:
// the fields of a node, its slots and its slots' restart markers.
type shardJSON struct {
	auditNodeJSON
	ID              string   `json:"id"`
	Slots           []string `json:"slots"`
	ClusterState    string   `json:"cluster_state,omitempty"`
	SlotsReady      int      `json:"slots_ready"`
	SlotsUnmarked   int      `json:"slots_unmarked"`
	SlotsRestarted  int      `json:"slots_restarted"`
	SlotsRecovering int      `json:"slots_recovering"`
	SlotsUnreadable int      `json:"slots_unreadable"`
}

// findingJSON is one finding in doctor's JSON output.
type findingJSON struct {
	Node     string `json:"node"`
	Shard    string `json:"shard,omitempty"`
	Severity string `json:"severity"`
	Check    string `json:"check"`
	Message  string `json:"message"`
	Remedy   string `json:"remedy"`
}

// doctorJSON is doctor's JSON output.
type doctorJSON struct {
	Unsafe    bool            `json:"unsafe"`
	Available bool            `json:"available"`
	Quorum    int             `json:"quorum"`
	Reachable int             `json:"reachable"`
	Nodes     []auditNodeJSON `json:"nodes"`
	Findings  []findingJSON   `json:"findings"`
}

func setupDoctor(fs *flag.FlagSet) runner {
	var nodes nodeFlags
	nodes.register(fs, true, false)
	asJSON := fs.Bool("json", false, "print one JSON object, also on failure")
	return func(ctx context.Context, s streams, args []string) int {
		r := report{s: s, cmd: "doctor", json: *asJSON}
		if msg := positional(args); msg != "" {
			return r.usage(msg)
		}
		listed, err := nodes.urls()
		if err != nil {
			return r.failedAs(failConfig, nodes.refused(err))
		}
		note := nodes.unsetNote()
		// A node listed twice would make Dial fail; it is a finding instead,
		// and the audit goes on with each node once.
		urls, dups, err := dedupe(listed)
		if err != nil {
			return r.failedAs(failConfig, nodes.refused(err))
		}
		nodes.nodes = strings.Join(urls, ",")
		nodes.fs.Set("nodes", nodes.nodes)
		limits := doctor.LimitsOf(*nodes.options())
		// The audit waits for a slow node far longer than a lock would.
		nodes.nodeTimeout = doctor.NodeTimeout
		client, f, err := nodes.dial(ctx, s.stderr)
		var refused error // why Dial refused the node list, which every other verb does too
		if err != nil && f == failConfig && !errors.Is(err, observe.ErrEndpoint) {
			// A node that Dial refuses (credentials refused, the same
			// server under two addresses, ...) is what the audit is for:
			// it becomes a finding, and the audit goes on.
			refused = err
			client, err = auditClient(urls, nodes.options())
		}
		if err != nil {
			return r.failedAs(f, err)
		}
		defer nodes.close(client)
		conns, err := probeConns(urls)
		if err != nil {
			return r.failedAs(failConfig, nodes.refused(err))
		}
		defer closeAll(conns)
		audit, err := doctor.Audit(ctx, client, conns, limits)
		if err != nil {
			return r.failedAs(failInterrupted, err)
		}
		return r.audited(audit, withNote(withRefusal(append(dups, audit.Findings...), refused), note), len(dups) > 0 || refused != nil)
	}
}

// audited prints the audit with its findings, and returns doctor's exit
// status; refused says that the node list is one the other verbs refuse
// (a node twice, a node that refuses its URL).
func (r report) audited(audit *doctor.Report, findings []doctor.Finding, refused bool) int {
	unsafe := audit.Unsafe() || refused
	// A node list that every other verb refuses takes no lock, whatever
	// the nodes' votes.
	available := audit.Available() && !refused
	if r.json {
		writeJSON(r.s.stdout, doctorReportJSON(audit, findings, unsafe, available))
	} else {
		writeAudit(r.s.stdout, audit, findings, unsafe)
	}
	switch {
	case unsafe:
		return exitFailure
	case !audit.Available():
		return exitUnavailable
	}
	return exitOK
}

// withRefusal returns findings with, first, a critical finding of refused,
// why Dial refused the node list, when no critical finding says why
// already (a member of a Redis Cluster given without cluster=1, say).
func withRefusal(findings []doctor.Finding, refused error) []doctor.Finding {
	if refused == nil || slices.ContainsFunc(findings, func(f doctor.Finding) bool { return f.Severity == doctor.Critical }) {
		return findings
	}
	return append([]doctor.Finding{{Severity: doctor.Critical, Check: "nodes",
		Message: errText(refused), Remedy: "fix the node list: every other verb refuses it as it is"}}, findings...)
}

// withNote returns findings with an info finding of note, why the audit
// reads the nodes it does, when there is one: before the other info
// findings, which come last.
func withNote(findings []doctor.Finding, note string) []doctor.Finding {
	if note == "" {
		return findings
	}
	i := slices.IndexFunc(findings, func(f doctor.Finding) bool { return f.Severity == doctor.Info })
	if i < 0 {
		i = len(findings)
	}
	return slices.Insert(findings, i, doctor.Finding{Severity: doctor.Info, Check: "nodes", Message: note,
		Remedy: "give the nodes to audit with --nodes URL,URL,... or $" + envNodes})
}

// auditClient returns a Client over urls with opts that, unlike
// goredis.Dial, asks nothing of the nodes first, for the audit's reading
// of the restart quarantine (Client.Inspect).
func auditClient(urls []string, opts *redlock.Options) (*redlock.Client, error) {
	conns, err := probeConns(urls)
	if err != nil {
		return nil, err
	}
	client, err := redlock.New(conns, opts)
	if err != nil {
		closeAll(conns)
		return nil, err
	}
	return client, nil
}

// probeConns returns a connection per URL for the audit's own commands.
func probeConns(urls []string) ([]redlock.Conn, error) {
	var conns []redlock.Conn
	for _, u := range urls {
		c, err := goredis.NewURL(u)
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []redlock.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// dedupe drops node URLs that reach an address already listed, and returns a
// critical finding for each.
func dedupe(urls []string) (unique []string, findings []doctor.Finding, err error) {
	seen := map[string]string{}
	for _, u := range urls {
		addr, err := nodeAddr(u)
		if err != nil {
			return nil, nil, err
		}
		if first, dup := seen[addr]; dup {
			findings = append(findings, doctor.Finding{Severity: doctor.Critical, Check: "duplicate",
				Message: fmt.Sprintf("%s and %s are the same node", goredis.RedactURL(first), goredis.RedactURL(u)),
				Remedy:  "list each node once: one server must not vote more than once"})
			continue
		}
		seen[addr] = u
		unique = append(unique, u)
	}
	return unique, findings, nil
}

// nodeAddr returns the address a node URL reaches first: its server's, or
// for a Redis Cluster (?cluster) its first seed node's, or for a
// Sentinel-managed master (?master_name) its name at the first Sentinel.
// Two URLs of one cluster with other seeds are found by the audit, by the
// masters' run_ids.
func nodeAddr(raw string) (string, error) {
	if u, err := url.Parse(raw); err == nil && u.Query().Has("cluster") {
		return u.Host, nil
	} else if err == nil && u.Query().Has("master_name") {
		return u.Query().Get("master_name") + "@" + u.Host, nil
	}
	o, err := goredis.ParseURL(raw)
	if err != nil {
		return "", err
	}
	return o.Addr, nil
}

func doctorReportJSON(r *doctor.Report, findings []doctor.Finding, unsafe, available bool) doctorJSON {
	out := doctorJSON{Unsafe: unsafe, Available: available, Quorum: r.Quorum, Reachable: r.Reachable, Nodes: []auditNodeJSON{}, Findings: []findingJSON{}}
	for _, n := range r.Nodes {
		j := auditNodeOf(n)
		j.UncoveredSlots = slotStrings(n.Uncovered)
		j.SlotsUnserved = n.SlotsUnserved()
		for _, s := range n.Shards {
			m := s.Markers
			j.Shards = append(j.Shards, shardJSON{auditNodeJSON: auditNodeOf(s.Master), ID: s.ID, Slots: slotStrings(s.Slots),
				ClusterState: s.ClusterState, SlotsReady: m.Ready, SlotsUnmarked: slotCount(m.Unmarked),
				SlotsRestarted: slotCount(m.Restarted), SlotsRecovering: slotCount(m.Recovering), SlotsUnreadable: slotCount(m.Unreadable)})
		}
		out.Nodes = append(out.Nodes, j)
	}
	for _, f := range findings {
		out.Findings = append(out.Findings, findingJSON{Node: f.Node, Shard: f.Shard, Severity: f.Severity.String(), Check: f.Check,
			Message: f.Message, Remedy: f.Remedy})
	}
	return out
}

// auditNodeOf is the JSON of one node, or of a master of a Redis Cluster node,
// without its shards.
func auditNodeOf(n doctor.Node) auditNodeJSON {
	j := auditNodeJSON{Node: n.Node, Reachable: n.Reachable, Version: n.Version, ValkeyVersion: n.ValkeyVersion, Role: n.Role,
		AppendOnly: n.AppendOnly, AppendFsync: n.AppendFsync, MaxMemoryPolicy: n.MaxMemoryPolicy,
		ClockOffsetMs: ms(n.ClockOffset), ClockKnown: n.ClockKnown, RTTMs: ms(n.RTT),
		Recovering: n.Recovering, WritesStalled: n.WritesStalled, QuarantineUnknown: n.QuarantineUnknown(), PartlyRecovering: n.PartlyRecovering, RecoveringLeftMs: n.RecoveringLeft.Milliseconds(),
		UptimeSeconds: int64(n.Uptime / time.Second), ConnectedReplicas: n.Replicas, Cluster: n.Cluster}
	if n.Err != nil {
		j.Error = n.Err.Error()
	}
	return j
}

// slotStrings renders slot ranges as CLUSTER NODES does: "0-5460".
func slotStrings(ranges []doctor.SlotRange) []string {
	var out []string
	for _, r := range ranges {
		out = append(out, r.String())
	}
	return out
}

// slotCount returns the number of slots in ranges.
func slotCount(ranges []doctor.SlotRange) int {
	n := 0
	for _, r := range ranges {
		n += r.Len()
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writeAudit prints the node table, the findings and the verdict.
func writeAudit(w io.Writer, r *doctor.Report, findings []doctor.Finding, unsafe bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATUS\tVERSION\tROLE\tPERSISTENCE\tEVICTION\tCLOCK OFFSET\tRTT\tQUARANTINE")
	for _, n := range r.Nodes {
		if n.Shards == nil {
			writeAuditRow(tw, n.Node, n, quarantineText(n))
			continue
		}
		fmt.Fprintf(tw, "%s\tup\t-\tcluster\t-\t-\t-\t-\t%s\n", n.Node, quarantineText(n))
		for _, s := range n.Shards {
			writeAuditRow(tw, "  "+s.Name(), s.Master, markersText(s))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d of %d nodes reachable, %d needed.\n", r.Reachable, len(r.Nodes), r.Quorum)
	if refused := countRefused(r); refused > 0 {
		fmt.Fprintf(w, "(%d more answered but refused this client's credentials: see the findings.)\n", refused)
	}
	if len(findings) > 0 {
		fmt.Fprintln(w, "\nFindings:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, f := range findings {
			node := f.Node
			if node == "" {
				node = "all nodes"
			}
			if f.Shard != "" {
				node += " shard " + f.Shard
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Severity, f.Check, node, f.Message)
			if f.Remedy != "" {
				fmt.Fprintf(tw, "  \t\t\tremedy: %s\n", f.Remedy)
			}
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	switch {
	case unsafe:
		fmt.Fprintln(w, "UNSAFE: a critical finding above makes locks on these nodes unsafe or impossible now.")
	case !r.Available():
		fmt.Fprintln(w, "UNAVAILABLE: no finding makes locks unsafe, but too few nodes vote now: no lock can be taken until they do.")
	default:
		fmt.Fprintln(w, "OK: no finding makes locks unsafe.")
	}
}

// writeAuditRow prints the table row of one server: a node, or a master of
// a Redis Cluster node.
func writeAuditRow(tw io.Writer, name string, n doctor.Node, quarantine string) {
	if !n.Reachable {
		status := "unreachable"
		if n.CredentialsRefused() {
			status = "refused"
		}
		fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\n", name, status)
		return
	}
	clock := "unknown"
	if n.ClockKnown {
		clock = fmt.Sprintf("%+.3fms ±%.3fms", ms(n.ClockOffset), ms(n.RTT/2))
	}
	status := "up"
	if n.WritesStalled {
		status = "no writes"
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3fms\t%s\n", name, status, or(serverVersion(n)), or(n.Role),
		persistence(n), or(n.MaxMemoryPolicy), clock, ms(n.RTT), quarantine)
}

// serverVersion is a node's release in the table: Valkey's own, named,
// where the server is Valkey (whose redis_version is the Redis release it
// is compatible with).
func serverVersion(n doctor.Node) string {
	if n.ValkeyVersion != "" {
		return "valkey " + n.ValkeyVersion
	}
	return n.Version
}

// quarantineText is a node's restart quarantine state in the table. A
// node without its marker, or restarted since it was written, starts
// sitting out at the next acquisition that reaches it: until then no
// countdown runs, and the table says so rather than show one that stands
// still.
func quarantineText(n doctor.Node) string {
	switch {
	case n.Loading:
		return "loading"
	case n.QuarantineUnknown():
		return "unknown: marker unreadable"
	case n.Recovering && n.Shards != nil:
		return "slots recovering"
	case n.PartlyRecovering:
		return "some slots recovering"
	case n.Recovering && (n.NoMarker || n.Restarted):
		return fmt.Sprintf("recovering, %s from the next acquisition", n.RecoveringLeft.Round(time.Second))
	case n.Recovering:
		return fmt.Sprintf("recovering, %s left", n.RecoveringLeft.Round(time.Second))
	case n.SlotsUnserved():
		return "some slots unserved"
	}
	return "ready"
}

// markersText sums up a shard's restart markers in the table: "ready", or
// how many slots are in each state but ready.
func markersText(s doctor.Shard) string {
	if s.Master.Loading {
		return "loading"
	}
	m := s.Markers
	var parts []string
	for _, c := range []struct {
		ranges []doctor.SlotRange
		state  string
	}{{m.Unmarked, "unmarked"}, {m.Restarted, "restarted"}, {m.Recovering, "recovering"}, {m.Unreadable, "unreadable"}} {
		if n := slotCount(c.ranges); n > 0 {
			parts = append(parts, fmt.Sprintf("%d slots %s", n, c.state))
		}
	}
	if len(parts) == 0 {
		return "ready"
	}
	return strings.Join(parts, ", ")
}

func persistence(n doctor.Node) string {
	switch {
	case n.AppendOnly == "yes" && n.AppendFsync != "":
		return "aof fsync " + n.AppendFsync
	case n.AppendOnly == "no" && n.Save != "" && n.Save != "none":
		return "rdb only"
	case n.AppendOnly == "no":
		return "none"
	}
	return "unknown"
}

func or(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// countRefused returns how many nodes of r answered but refused the
// credentials of their URLs, which count as unreachable.
func countRefused(r *doctor.Report) int {
	n := 0
	for _, node := range r.Nodes {
		if node.CredentialsRefused() {
			n++
		}
	}
	return n
}

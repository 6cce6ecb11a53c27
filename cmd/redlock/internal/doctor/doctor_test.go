package doctor_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/cmd/redlock/internal/doctor"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// audit runs doctor.Audit over conns, as clients with opts see them, and
// fails the test on an error.
func audit(t *testing.T, conns []redlock.Conn, opts *redlock.Options) *doctor.Report {
	t.Helper()
	c, limits := client(t, conns, opts)
	r, err := doctor.Audit(bg, c, conns, limits)
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	if len(r.Nodes) != len(conns) {
		t.Fatalf("%d node audits for %d nodes", len(r.Nodes), len(conns))
	}
	return r
}

// markReady marks the nodes of conns ready, as 'redlock init' does on a
// brand-new deployment.
func markReady(t *testing.T, conns []redlock.Conn) {
	t.Helper()
	c, _ := client(t, conns, nil)
	if err := c.MarkReady(bg, false); err != nil {
		t.Fatal(err)
	}
}

// client returns a Client over conns for doctor.Audit, with opts and the
// audit's per-node timeout, and the limits of clients with opts.
func client(t *testing.T, conns []redlock.Conn, opts *redlock.Options) (*redlock.Client, doctor.Limits) {
	t.Helper()
	var o redlock.Options
	if opts != nil {
		o = *opts
	}
	limits := doctor.LimitsOf(o)
	o.NodeTimeout = doctor.NodeTimeout
	c, err := redlock.New(conns, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, limits
}

// findings returns the report's findings of check about node as a whole
// ("" for the ones about all nodes), not about one of its shards.
func findings(r *doctor.Report, node, check string) []doctor.Finding {
	var fs []doctor.Finding
	for _, f := range r.Findings {
		if f.Node == node && f.Shard == "" && f.Check == check {
			fs = append(fs, f)
		}
	}
	return fs
}

// wantFinding fails the test unless the report has exactly one finding of
// check about node, with severity sev, and returns it.
func wantFinding(t *testing.T, r *doctor.Report, node, check string, sev doctor.Severity) doctor.Finding {
	t.Helper()
	fs := findings(r, node, check)
	if len(fs) != 1 || fs[0].Severity != sev {
		t.Fatalf("want one %s %q finding on %q, got %v\nall findings:\n%s", sev, check, node, fs, report(r))
	}
	if fs[0].Message == "" || fs[0].Remedy == "" {
		t.Errorf("finding without message or remedy: %+v", fs[0])
	}
	return fs[0]
}

// wantNoFinding fails the test if the report has a finding of check about node.
func wantNoFinding(t *testing.T, r *doctor.Report, node, check string) {
	t.Helper()
	if fs := findings(r, node, check); len(fs) != 0 {
		t.Errorf("unexpected %q finding on %q: %v", check, node, fs)
	}
}

// wantNoCritical fails the test if the report has a critical finding.
func wantNoCritical(t *testing.T, r *doctor.Report) {
	t.Helper()
	if r.Unsafe() {
		t.Errorf("Unsafe() = true:\n%s", report(r))
	}
	for _, f := range r.Findings {
		if f.Severity == doctor.Critical {
			t.Errorf("critical finding: %s", f)
		}
	}
}

func report(r *doctor.Report) string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// joinConns returns the goredis conns of several clusters' nodes, in order.
func joinConns(t *testing.T, clusters ...*redlocktest.Cluster) []redlock.Conn {
	var addrs []string
	for _, c := range clusters {
		addrs = append(addrs, c.Addrs()...)
	}
	return goredisConns(t, addrs)
}

func TestAudit_healthy(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		conns := a.conns(t, cluster.Addrs())
		markReady(t, conns)
		r := audit(t, conns, nil)
		wantNoCritical(t, r)
		if r.Quorum != 2 || r.Reachable != 3 {
			t.Errorf("Quorum %d, Reachable %d; want 2, 3", r.Quorum, r.Reachable)
		}
		runIDs := map[string]bool{}
		for i, n := range r.Nodes {
			wantReachableMaster(t, cluster.Node(i), n)
			wantDefaultsAndLoopbackTiming(t, i, n)
			runIDs[n.RunID] = true
			wantNoFinding(t, r, n.Node, "eviction")
			wantNoFinding(t, r, n.Node, "clock")
			wantNoFinding(t, r, n.Node, "config")
			wantNoFinding(t, r, n.Node, "replica")
		}
		if len(runIDs) != 3 {
			t.Errorf("%d distinct run_ids on 3 servers", len(runIDs))
		}
		wantNoFinding(t, r, "", "duplicate")
		wantNoFinding(t, r, "", "quorum")
	})
}

// The audit says which TTL the clients of the nodes can use: at most the
// recovery delay they were given, with the two ways to hold a lock longer;
// without the restart quarantine, any.
func TestAudit_ttlCeiling(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	for _, tc := range []struct {
		name string
		opts *redlock.Options
		want []string
	}{
		{"default", nil, []string{"a TTL of at most 30s", "redlock run", "WithAutoRenew",
			"raise --recovery-delay (Options.RecoveryDelay) on every client of these nodes together"}},
		{"raised", &redlock.Options{RecoveryDelay: 45 * time.Second}, []string{"a TTL of at most 45s"}},
		{"no quarantine", &redlock.Options{DisableQuarantine: true}, []string{"quarantine is off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := audit(t, goredisConns(t, cluster.Addrs()), tc.opts) // Client.Close closes the conns
			if !r.Nodes[0].Reachable {
				t.Fatalf("node unreachable: %v", r.Nodes[0].Err)
			}
			f := wantFinding(t, r, "", "ttl", doctor.Info)
			for _, want := range tc.want {
				if !strings.Contains(f.String(), want) {
					t.Errorf("the ttl finding lacks %q: %s", want, f)
				}
			}
		})
	}
}

// wantReachableMaster fails the test unless n is the audit of node, which
// answered: a Redis 7 master.
func wantReachableMaster(t *testing.T, node *redlocktest.Node, n doctor.Node) {
	t.Helper()
	i := node.Index()
	if !n.Reachable || n.Err != nil {
		t.Errorf("node %d: Reachable %v, Err %v", i, n.Reachable, n.Err)
	}
	if !strings.HasSuffix(n.Node, ":"+strconv.Itoa(node.Port())) {
		t.Errorf("node %d is %q, want %s", i, n.Node, node.Addr())
	}
	if n.Version != installedVersion(t).String() || len(n.RunID) != 40 || n.Role != "master" {
		t.Errorf("node %d: Version %q, RunID %q, Role %q", i, n.Version, n.RunID, n.Role)
	}
}

// wantDefaultsAndLoopbackTiming fails the test unless n, the audit of node
// i, shows redlocktest's settings, a round trip under a second and a clock
// that agrees with this host's.
func wantDefaultsAndLoopbackTiming(t *testing.T, i int, n doctor.Node) {
	t.Helper()
	// redlocktest.s defaults: no persistence at all, no eviction.
	if n.AppendOnly != "no" || n.AppendFsync != "everysec" || n.Save != "none" || n.MaxMemoryPolicy != "noeviction" {
		t.Errorf("node %d: appendonly %q, appendfsync %q, save %q, maxmemory-policy %q",
			i, n.AppendOnly, n.AppendFsync, n.Save, n.MaxMemoryPolicy)
	}
	if n.RTT <= 0 || n.RTT > time.Second || n.Uptime > time.Hour {
		t.Errorf("node %d: RTT %s, Uptime %s", i, n.RTT, n.Uptime)
	}
	// Same host, same clock: the server read its clock between our
	// two readings, so the offset is within half the round trip
	// (plus TIME's microsecond truncation).
	if !n.ClockKnown || n.ClockOffset.Abs() > n.RTT/2+time.Microsecond {
		t.Errorf("node %d: clock offset %s (known %v) beyond RTT/2 = %s on loopback", i, n.ClockOffset, n.ClockKnown, n.RTT/2)
	}
}

func TestAudit_persistence(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		r := audit(t, goredisConns(t, cluster.Addrs()), nil)
		for _, n := range r.Nodes {
			f := wantFinding(t, r, n.Node, "persistence", doctor.Warning)
			if !strings.Contains(f.Remedy, "quarantine") || !strings.Contains(f.Remedy, "appendfsync always") {
				t.Errorf("remedy %q names neither the quarantine nor appendfsync always", f.Remedy)
			}
		}
	})
	t.Run("appendfsyncAlways", func(t *testing.T) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, AppendFsyncAlways: true})
		r := audit(t, goredisConns(t, cluster.Addrs()), nil)
		wantNoCritical(t, r)
		for _, n := range r.Nodes {
			if n.AppendOnly != "yes" || n.AppendFsync != "always" {
				t.Errorf("%s: appendonly %q, appendfsync %q", n.Node, n.AppendOnly, n.AppendFsync)
			}
			wantNoFinding(t, r, n.Node, "persistence")
		}
	})
	t.Run("noneWithoutQuarantine", func(t *testing.T) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		r := audit(t, goredisConns(t, cluster.Addrs()), &redlock.Options{DisableQuarantine: true})
		if !r.Unsafe() {
			t.Error("Unsafe() = false: no persistence and no quarantine")
		}
		for _, n := range r.Nodes {
			f := wantFinding(t, r, n.Node, "persistence", doctor.Critical)
			if !strings.Contains(f.Remedy, "appendfsync always") {
				t.Errorf("remedy %q does not name appendfsync always", f.Remedy)
			}
			if n.Recovering {
				t.Errorf("%s recovering with the quarantine off", n.Node)
			}
			wantNoFinding(t, r, n.Node, "recovering")
		}
	})
	t.Run("appendfsyncAlwaysWithoutQuarantine", func(t *testing.T) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, AppendFsyncAlways: true})
		r := audit(t, goredisConns(t, cluster.Addrs()), &redlock.Options{DisableQuarantine: true})
		wantNoCritical(t, r)
		for _, n := range r.Nodes {
			wantNoFinding(t, r, n.Node, "persistence")
		}
	})
	t.Run("everysec", func(t *testing.T) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Config: []string{"appendonly yes", "appendfsync everysec"}})
		r := audit(t, goredisConns(t, cluster.Addrs()), nil)
		f := wantFinding(t, r, r.Nodes[0].Node, "persistence", doctor.Warning)
		if !strings.Contains(f.Message, "everysec") {
			t.Errorf("message %q does not name the setting", f.Message)
		}
	})
}

func TestAudit_eviction(t *testing.T) {
	good := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	evicting := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Config: []string{"maxmemory-policy volatile-lru"}})
	r := audit(t, joinConns(t, good, evicting), nil)
	if !r.Unsafe() {
		t.Errorf("Unsafe() = false with an evicting node:\n%s", report(r))
	}
	bad := r.Nodes[2]
	if bad.MaxMemoryPolicy != "volatile-lru" {
		t.Errorf("MaxMemoryPolicy %q, want volatile-lru", bad.MaxMemoryPolicy)
	}
	f := wantFinding(t, r, bad.Node, "eviction", doctor.Critical)
	if !strings.Contains(f.Remedy, "noeviction") {
		t.Errorf("remedy %q does not say noeviction", f.Remedy)
	}
	if r.Findings[0].Severity != doctor.Critical {
		t.Errorf("findings not sorted most severe first:\n%s", report(r))
	}
	for _, n := range r.Nodes[:2] {
		wantNoFinding(t, r, n.Node, "eviction")
	}
}

func TestAudit_duplicateServer(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	addrs := cluster.Addrs()
	// Node 0 twice, under two names: New's duplicate check by name passes.
	addrs = append(addrs, "localhost:"+strconv.Itoa(cluster.Node(0).Port()))
	// The servers are marked ready once each: a Client left out the
	// second name of node 0 as a duplicate, and could not mark it.
	markReady(t, goredisConns(t, cluster.Addrs()))
	conns := goredisConns(t, addrs)
	r := audit(t, conns, nil)
	f := wantFinding(t, r, "", "duplicate", doctor.Critical)
	if !strings.Contains(f.Message, addrs[0]) || !strings.Contains(f.Message, addrs[3]) || !strings.Contains(f.Message, r.Nodes[0].RunID) {
		t.Errorf("message %q does not name both addresses and the run_id", f.Message)
	}
	if !r.Unsafe() {
		t.Error("Unsafe() = false with one server counted twice")
	}
	wantFinding(t, r, "", "quorum", doctor.Info) // 4 nodes: even count
}

func TestAudit_quorumLost(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	conns := goredisConns(t, cluster.Addrs())
	for _, i := range []int{1, 2} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	r := audit(t, conns, nil)
	if r.Reachable != 1 || !r.Unsafe() {
		t.Errorf("Reachable %d, Unsafe %v; want 1, true", r.Reachable, r.Unsafe())
	}
	for _, i := range []int{1, 2} {
		n := r.Nodes[i]
		if n.Reachable || n.Err == nil || n.Version != "" || n.RTT != 0 {
			t.Errorf("killed node %d: Reachable %v, Err %v, Version %q, RTT %s", i, n.Reachable, n.Err, n.Version, n.RTT)
		}
		wantFinding(t, r, n.Node, "unreachable", doctor.Warning)
		wantNoFinding(t, r, n.Node, "persistence")
	}
	f := wantFinding(t, r, "", "quorum", doctor.Critical)
	if !strings.Contains(f.Message, "1 of 3") {
		t.Errorf("message %q does not count the reachable nodes", f.Message)
	}
}

func TestAudit_pausedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the audit's per-node timeout")
	}
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	conns := goredisConns(t, cluster.Addrs())
	if err := cluster.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	defer cluster.Node(0).Resume()
	start := time.Now()
	r := audit(t, conns, nil)
	// The per-node timeout is 3 s; twice that is a generous liveness bound.
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("Audit with a paused node took %s", took)
	}
	var ne net.Error
	if n := r.Nodes[0]; n.Reachable || !(errors.Is(n.Err, context.DeadlineExceeded) || errors.As(n.Err, &ne) && ne.Timeout()) {
		t.Errorf("paused node: Reachable %v, Err %v; want unreachable by timeout", n.Reachable, n.Err)
	}
	f := wantFinding(t, r, r.Nodes[0].Node, "unreachable", doctor.Warning)
	if !strings.Contains(f.Message, "no answer within") {
		t.Errorf("message %q does not say the node timed out", f.Message)
	}
	if !r.Nodes[1].Reachable || !r.Nodes[2].Reachable {
		t.Error("the nodes that answer are reported unreachable")
	}
}

func TestAudit_oneFailureLeft(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	conns := goredisConns(t, cluster.Addrs())
	if err := cluster.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	r := audit(t, conns, nil)
	wantNoCritical(t, r)
	wantFinding(t, r, "", "quorum", doctor.Warning)
}

func TestAudit_configRefused(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1, AppendFsyncAlways: true,
			Config: []string{`rename-command CONFIG ""`}})
		if _, err := cluster.Node(0).Do(bg, "CONFIG", "GET", "appendfsync"); err == nil {
			t.Fatal("CONFIG GET answered on a node without CONFIG")
		}
		r := audit(t, a.conns(t, cluster.Addrs()), nil)
		n := r.Nodes[0]
		if !n.Reachable || n.Err != nil {
			t.Fatalf("Reachable %v, Err %v", n.Reachable, n.Err)
		}
		// What only CONFIG GET tells is unknown; INFO still tells the rest.
		if n.AppendFsync != "" || n.Save != "" {
			t.Errorf("appendfsync %q, save %q; want unknown", n.AppendFsync, n.Save)
		}
		if n.AppendOnly != "yes" || n.MaxMemoryPolicy != "noeviction" {
			t.Errorf("appendonly %q, maxmemory-policy %q; want yes, noeviction from INFO", n.AppendOnly, n.MaxMemoryPolicy)
		}
		f := wantFinding(t, r, n.Node, "config", doctor.Info)
		if !strings.Contains(f.Message, "appendfsync") || strings.Contains(f.Message, "maxmemory-policy") {
			t.Errorf("message %q: want appendfsync unknown, maxmemory-policy known", f.Message)
		}
		wantFinding(t, r, n.Node, "persistence", doctor.Info)
		wantNoCritical(t, r)
	})
}

func TestAudit_replica(t *testing.T) {
	masters := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	replica := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
		Config: []string{fmt.Sprintf("replicaof 127.0.0.1 %d", masters.Node(0).Port())}})
	r := audit(t, joinConns(t, masters, replica), nil)
	if r.Nodes[2].Role != "replica" {
		t.Errorf("Role %q, want replica", r.Nodes[2].Role)
	}
	wantFinding(t, r, r.Nodes[2].Node, "replica", doctor.Critical)
	if !r.Unsafe() {
		t.Error("Unsafe() = false with a replica among the masters")
	}
	wantNoFinding(t, r, r.Nodes[1].Node, "replica")
}

func TestAudit_recovering(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Unmarked: true})
	conns := goredisConns(t, cluster.Addrs())
	serverMicros := func(n *redlocktest.Node) int64 {
		v, err := n.Do(bg, "TIME")
		if err != nil {
			t.Fatal(err)
		}
		sec, usec, _ := strings.Cut(v, "\n")
		s, _ := strconv.ParseInt(sec, 10, 64)
		us, _ := strconv.ParseInt(usec, 10, 64)
		return s*1e6 + us
	}
	set := func(i int, value string) {
		if _, err := cluster.Node(i).Do(bg, "SET", markerKey, value); err != nil {
			t.Fatal(err)
		}
	}
	set(0, "0")                                                                                  // marked ready by an operator
	set(1, strconv.FormatInt(serverMicros(cluster.Node(1))-(10*time.Second).Microseconds(), 10)) // restarted 10 s ago
	// Node 2 has no marker: it restarted empty.
	r := audit(t, conns, nil)
	if n := r.Nodes[0]; n.Recovering {
		t.Errorf("node marked ready is recovering, %s left", n.RecoveringLeft)
	}
	wantNoFinding(t, r, r.Nodes[0].Node, "recovering")
	n := r.Nodes[1]
	if !n.Recovering || n.RecoveringLeft > 20*time.Second || n.RecoveringLeft < 15*time.Second {
		t.Errorf("node marked 10 s ago: Recovering %v, %s left; want about 20 s", n.Recovering, n.RecoveringLeft)
	}
	if n := r.Nodes[2]; !n.Recovering || n.RecoveringLeft != 30*time.Second {
		t.Errorf("node without marker: Recovering %v, %s left; want the full 30 s", n.Recovering, n.RecoveringLeft)
	}
	// Two of three out: no quorum of usable nodes until one rejoins.
	f := wantFinding(t, r, r.Nodes[1].Node, "recovering", doctor.Warning)
	if !strings.Contains(f.Message, "s more") {
		t.Errorf("message %q does not say the time left", f.Message)
	}
	wantFinding(t, r, r.Nodes[2].Node, "recovering", doctor.Warning)
	wantNoCritical(t, r)

	// Once node 2 is ready, node 1 alone sitting out leaves a quorum: info.
	set(2, "0")
	r = audit(t, conns, nil)
	wantFinding(t, r, r.Nodes[1].Node, "recovering", doctor.Info)
	wantNoFinding(t, r, r.Nodes[2].Node, "recovering")

	// The delay is the client's: with a minute, node 1 has 50 s left.
	r = audit(t, goredisConns(t, cluster.Addrs()), &redlock.Options{RecoveryDelay: time.Minute})
	if n := r.Nodes[1]; !n.Recovering || n.RecoveringLeft > 50*time.Second || n.RecoveringLeft < 45*time.Second {
		t.Errorf("RecoveryDelay 1m, marked 10 s ago: Recovering %v, %s left; want about 50 s", n.Recovering, n.RecoveringLeft)
	}
	// A marker older than the delay: recovered.
	set(1, strconv.FormatInt(serverMicros(cluster.Node(1))-(31*time.Second).Microseconds(), 10))
	r = audit(t, conns, nil)
	if n := r.Nodes[1]; n.Recovering {
		t.Errorf("node marked 31 s ago still recovering, %s left", n.RecoveringLeft)
	}
}

// skewedConn shifts the node's TIME replies by skew, as a node whose clock is
// off would answer.
type skewedConn struct {
	redlock.Conn
	skew time.Duration
}

func (c skewedConn) Do(ctx context.Context, args ...string) (any, error) {
	v, err := c.Conn.Do(ctx, args...)
	if err != nil || !strings.EqualFold(args[0], "TIME") {
		return v, err
	}
	a := v.([]any)
	sec, _ := strconv.ParseInt(fmt.Sprint(a[0]), 10, 64)
	usec, _ := strconv.ParseInt(fmt.Sprint(a[1]), 10, 64)
	t := time.Unix(sec, usec*1000).Add(c.skew)
	return []any{strconv.FormatInt(t.Unix(), 10), strconv.Itoa(t.Nanosecond() / 1000)}, nil
}

func TestAudit_clockOffset(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	for _, tc := range []struct {
		skew time.Duration
		ttl  time.Duration
		sev  doctor.Severity // of node 1's clock finding; Info means none
	}{
		{-time.Second, 10 * time.Second, doctor.Critical}, // allowance 102 ms
		{time.Second, 10 * time.Second, doctor.Critical},
		{200 * time.Millisecond, 30 * time.Second, doctor.Info}, // allowance 302 ms
		{-50 * time.Millisecond, 10 * time.Second, doctor.Info},
	} {
		t.Run(fmt.Sprintf("%s_ttl%s", tc.skew, tc.ttl), func(t *testing.T) {
			conns := goredisConns(t, cluster.Addrs())
			conns[1] = skewedConn{conns[1], tc.skew}
			r := audit(t, conns, &redlock.Options{TTL: tc.ttl})
			n := r.Nodes[1]
			if d := n.ClockOffset - tc.skew; d.Abs() > n.RTT/2+time.Millisecond {
				t.Errorf("ClockOffset %s, want %s ± %s", n.ClockOffset, tc.skew, n.RTT/2)
			}
			if tc.sev == doctor.Info {
				wantNoFinding(t, r, n.Node, "clock")
				wantNoCritical(t, r)
				return
			}
			wantFinding(t, r, n.Node, "clock", tc.sev)
			wantNoFinding(t, r, r.Nodes[0].Node, "clock")
		})
	}
}

func TestAudit_cancelled(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	conns := goredisConns(t, cluster.Addrs())
	c, limits := client(t, conns, nil)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if r, err := doctor.Audit(ctx, c, conns, limits); !errors.Is(err, context.Canceled) || r != nil {
		t.Errorf("Audit with a cancelled context = %v, %v; want nil, context.Canceled", r, err)
	}
}

func TestAudit_severityString(t *testing.T) {
	for s, want := range map[doctor.Severity]string{
		doctor.Info: "info", doctor.Warning: "warning", doctor.Critical: "critical",
	} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}

// A master with a replica is safe while the quarantine is on (a promoted
// replica is another process, and sits out the recovery delay) but can
// lose locks (a warning), unsafe without it, and safe when grants wait for
// the replica, but with a warning when they wait for all its replicas;
// waiting for more replicas than the master has is critical.
func TestAudit_masterWithReplica(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	redlocktest.Start(t, redlocktest.Options{Nodes: 1, // its replica
		Config: []string{fmt.Sprintf("replicaof 127.0.0.1 %d", master.Node(0).Port())}})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, err := master.Node(0).Do(bg, "INFO", "replication")
		if err == nil && strings.Contains(info, "connected_slaves:1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never connected: %v %q", err, info)
		}
	}
	conns := goredisConns(t, master.Addrs())
	r := audit(t, conns, nil)
	wantFinding(t, r, r.Nodes[0].Node, "replica", doctor.Warning)
	// Grants that wait for its only replica: a failover hands the locks
	// over, but the new master has no replica left to confirm the next.
	r = audit(t, conns, &redlock.Options{WaitReplicas: 1, DisableQuarantine: true})
	f := wantFinding(t, r, r.Nodes[0].Node, "replica", doctor.Warning)
	if !strings.Contains(f.Message, "leaves the new master with 0") {
		t.Errorf("message %q does not say what a failover leaves", f.Message)
	}
	r = audit(t, conns, &redlock.Options{WaitReplicas: 2})
	wantFinding(t, r, r.Nodes[0].Node, "replica", doctor.Critical)
	r = audit(t, conns, &redlock.Options{DisableQuarantine: true})
	wantFinding(t, r, r.Nodes[0].Node, "replica", doctor.Critical)
	if !r.Unsafe() {
		t.Error("Unsafe() = false for a master with a replica and no quarantine")
	}
}

// A user without INFO would leave the quarantine blind to restarts that
// reload older data, and the scripts refuse it every acquisition: critical
// while the quarantine is on.
func TestAudit_infoRefused(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	conn := connAs(t, cluster.Node(0), "auditor", "-info")
	conns := []redlock.Conn{conn}
	r := audit(t, conns, nil)
	f := wantFinding(t, r, r.Nodes[0].Node, "version", doctor.Critical)
	if !strings.Contains(f.Message, "restart") || !r.Unsafe() {
		t.Errorf("message %q does not say restarts go unseen", f.Message)
	}
	r = audit(t, conns, &redlock.Options{DisableQuarantine: true})
	wantFinding(t, r, r.Nodes[0].Node, "version", doctor.Info)
}

// connAs returns a Conn to node as user, an ACL user made with every key,
// channel and command but those rules take away.
func connAs(t *testing.T, node *redlocktest.Node, user string, rules ...string) redlock.Conn {
	t.Helper()
	if _, err := node.Do(bg, append([]string{"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all"}, rules...)...); err != nil {
		t.Fatal(err)
	}
	conn, err := goredis.NewURL("redis://" + user + ":pw@" + node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// installedVersion is the release of the redis-server the tests start.
func installedVersion(t *testing.T) redlocktest.Version {
	t.Helper()
	v, err := redlocktest.ServerVersion("")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// needs skips the test where the redis-server the tests start lacks f:
// the tests run against an older release only when PATH puts it first.
func needs(t *testing.T, f redlocktest.Feature) {
	t.Helper()
	if v := installedVersion(t); !v.Has(f) {
		t.Skipf("redis-server %s lacks %s", v, f)
	}
}

// A user refused TIME cannot read the restart marker either, as the
// scripts read the node's clock: both findings name TIME as the remedy.
// Before, the marker's remedy said to allow EVALSHA, which the user had.
func TestAudit_timeRefusedNamedForTheMarker(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	conn := connAs(t, cluster.Node(0), "notime", "-time")
	r := audit(t, []redlock.Conn{conn}, nil)
	for _, check := range []string{"clock", "recovering"} {
		f := wantFinding(t, r, r.Nodes[0].Node, check, map[string]doctor.Severity{"clock": doctor.Critical, "recovering": doctor.Info}[check])
		if !strings.Contains(f.Remedy, "allow TIME") || strings.Contains(f.Remedy, "EVALSHA") {
			t.Errorf("%s finding %+v: want TIME named as what to allow, and not EVALSHA", check, f)
		}
	}
}

// A node that refuses the library's functions, by its ACL or as Redis
// 6.2, gets an Info finding that says the scripts run by EVALSHA and what
// that costs; a Redis 7 node that takes them gets none.
func TestAudit_functions(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		needs(t, redlocktest.Functions) // the ACL rule -fcall
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
		if _, err := cluster.Node(1).Do(bg, "ACL", "SETUSER", "default", "-fcall", "-function"); err != nil {
			t.Fatal(err)
		}
		conns := a.conns(t, cluster.Addrs())
		r := audit(t, conns, &redlock.Options{DisableQuarantine: true})
		wantNoFinding(t, r, r.Nodes[0].Node, "functions")
		f := wantFinding(t, r, r.Nodes[1].Node, "functions", doctor.Info)
		if !strings.Contains(f.Message, "EVALSHA") || !strings.Contains(f.Remedy, "+fcall") {
			t.Errorf("finding %+v: want EVALSHA named, and +fcall in the remedy", f)
		}
	})
	// Without FUNCTION and FCALL: Redis 6.2 when PATH puts it first, or
	// else a later release with both renamed away.
	v := installedVersion(t)
	var config []string
	if v.AtLeast(7, 0) {
		config = []string{`rename-command FUNCTION ""`, `rename-command FCALL ""`}
	}
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Config: config})
	r := audit(t, adapters[0].conns(t, cluster.Addrs()), &redlock.Options{DisableQuarantine: true})
	f := wantFinding(t, r, r.Nodes[0].Node, "functions", doctor.Info)
	switch {
	case !v.AtLeast(7, 0) && (!strings.Contains(f.Message, v.String()) || !strings.Contains(f.Remedy, "Redis 7")):
		t.Errorf("finding %+v on Redis %s: want its version named, and an upgrade to Redis 7 as the remedy", f, v)
	case v.AtLeast(7, 0) && (!strings.Contains(f.Message, "EVALSHA") || !strings.Contains(f.Remedy, "rename-command") || strings.Contains(f.Message, "#!lua")):
		t.Errorf("finding %+v with FUNCTION renamed away: want EVALSHA named, rename-command in the remedy, and no script source", f)
	}
}

// A node at its maxmemory with noeviction refuses every new lock, and a
// node whose TIME is renamed away fails every acquisition of a new lock:
// both are critical. Before, doctor said OK for both.
func TestAudit_outOfMemoryAndTimeRenamed(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2, Config: []string{`rename-command TIME ""`}})
	full := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	if _, err := full.Node(0).Do(bg, "CONFIG", "SET", "maxmemory", "1"); err != nil {
		t.Fatal(err)
	}
	var conns []redlock.Conn
	for _, addr := range append(cluster.Addrs(), full.Addrs()...) {
		conn, err := goredis.NewURL("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns = append(conns, conn)
	}
	r := audit(t, conns, nil)
	for _, n := range r.Nodes[:2] {
		f := wantFinding(t, r, n.Node, "clock", doctor.Critical)
		if !strings.Contains(f.Message, "every acquisition of a new lock fails") {
			t.Errorf("TIME renamed: %+v", f)
		}
		wantNoFinding(t, r, n.Node, "memory")
	}
	f := wantFinding(t, r, r.Nodes[2].Node, "memory", doctor.Critical)
	if !strings.Contains(f.Message, "refuses every new lock") {
		t.Errorf("out of memory: %+v", f)
	}
	wantNoFinding(t, r, r.Nodes[2].Node, "clock")
	if !r.Unsafe() {
		t.Error("Unsafe() = false")
	}
}

// A node that pauses its writers (CLIENT PAUSE … WRITE) answers the
// audit's reads but grants no lock: it does not vote, and a majority of
// such nodes leaves no lock to take. Before, doctor said OK and took the
// stalled FUNCTION LOAD for a refusal of the library's functions; and on
// a server without functions (Redis 6.2), whose FUNCTION LOAD is refused
// at once, said OK, with a remedy for the marker that its pause held back.
func TestAudit_writesPaused(t *testing.T) {
	for _, functions := range []bool{true, false} {
		var config []string
		switch {
		case !installedVersion(t).Has(redlocktest.Functions):
			if functions {
				continue // none to rename away: the case below runs as is
			}
		case !functions:
			config = []string{`rename-command FUNCTION ""`, `rename-command FCALL ""`}
		}
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Config: config})
		conns := adapters[0].conns(t, cluster.Addrs())
		markReady(t, conns)
		for _, n := range cluster.Nodes()[:2] {
			if _, err := n.Do(bg, "CLIENT", "PAUSE", "60000", "WRITE"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Do(bg, "CLIENT", "UNPAUSE") })
		}
		r := audit(t, conns, nil)
		for i, n := range r.Nodes {
			if paused := i < 2; n.WritesStalled != paused {
				t.Errorf("functions %v: %s: WritesStalled %v, want %v", functions, n.Node, n.WritesStalled, paused)
			}
			if functions {
				wantNoFinding(t, r, n.Node, "functions")
			}
		}
		for _, n := range r.Nodes[:2] {
			if f := wantFinding(t, r, n.Node, "writes", doctor.Warning); !strings.Contains(f.Message, "CLIENT PAUSE") {
				t.Errorf("functions %v: writes paused: %+v", functions, f)
			}
			wantNoFinding(t, r, n.Node, "recovering")
		}
		if r.Available() || r.Unsafe() {
			t.Errorf("functions %v: Available() %v, Unsafe() %v: want a report of no lock to take now, nothing unsafe",
				functions, r.Available(), r.Unsafe())
		}
	}
}

// A node whose restart marker this user may not read (no scripts in its
// ACL) has an unknown quarantine state, which the table and the JSON say,
// rather than "ready": the node itself may be recovering.
func TestAudit_markerUnreadable(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	conn := connAs(t, cluster.Node(0), "noscripts", "-@scripting")
	r := audit(t, []redlock.Conn{conn}, nil)
	if n := r.Nodes[0]; !n.Reachable || !n.QuarantineUnknown() || n.Recovering {
		t.Errorf("Reachable %v, QuarantineUnknown %v, Recovering %v: want a reachable node whose quarantine is unknown",
			n.Reachable, n.QuarantineUnknown(), n.Recovering)
	}
	wantFinding(t, r, r.Nodes[0].Node, "recovering", doctor.Info)
	// Read with the scripts allowed, the same node is no unknown.
	r = audit(t, goredisConns(t, cluster.Addrs()), nil)
	if r.Nodes[0].QuarantineUnknown() {
		t.Error("QuarantineUnknown with a user that may read the marker")
	}
}

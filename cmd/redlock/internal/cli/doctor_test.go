package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/cmd/redlock/internal/doctor"
	"github.com/redlock-go/redlock/redlocktest"
)

// A Redis Cluster given as one node URL (?cluster=1) is audited master by
// master: each row and finding names a master by its address and slots,
// and the slots are unmarked until 'redlock init' marks them ready.
func TestDoctor_redisClusterNode(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, Unmarked: true})
	nodes := cluster.URLs()[0] + "?cluster=1&addr=" + cluster.Addrs()[1]
	r := cli(t, "doctor", "--nodes", nodes).expect(t, exitUnavailable, "doctor on a new Redis Cluster")
	for _, n := range cluster.Nodes() {
		shard := n.Addr() + " slots " + n.Slots()[0].String()
		wantDoctorSays(t, r.stdout, "  "+shard+" ", "shard "+shard+" ")
	}
	wantDoctorSays(t, r.stdout, "cluster  ", "5461 slots unmarked", "5461 of 5461 slots unmarked", "redlock init")

	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "init on a Redis Cluster")
	var report doctorJSON
	cli(t, "doctor", "--nodes", nodes, "--json").expect(t, exitOK, "doctor --json after init").decode(t, &report)
	if len(report.Nodes) != 1 || !report.Nodes[0].Cluster || len(report.Nodes[0].Shards) != len(cluster.Nodes()) {
		t.Fatalf("doctor --json: %+v", report)
	}
	for i, s := range report.Nodes[0].Shards {
		n := cluster.Node(i)
		if s.Node != n.Addr() || strings.Join(s.Slots, ",") != n.Slots()[0].String() ||
			s.SlotsReady != n.Slots()[0].Last-n.Slots()[0].First+1 || s.SlotsUnmarked != 0 || s.ClusterState != "ok" {
			t.Errorf("shard %d: %+v; want %s, slots %s all ready", i, s, n.Addr(), n.Slots()[0])
		}
	}
	for _, f := range report.Findings {
		if f.Check == "recovering" || f.Severity == "critical" {
			t.Errorf("after init: %+v", f)
		}
	}
	if report.Nodes[0].SlotsUnserved {
		t.Errorf("doctor --json after init: slots unserved, though every master answers")
	}

	// A master down: the cluster's row says its slots are unserved.
	if err := cluster.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "doctor", "--nodes", nodes)
	wantDoctorSays(t, r.stdout, "some slots unserved")
	report = doctorJSON{}
	cli(t, "doctor", "--nodes", nodes, "--json").decode(t, &report)
	if !report.Nodes[0].SlotsUnserved {
		t.Errorf("doctor --json with a master down: slots_unserved false")
	}
}

// On brand-new nodes, every node sits out its recovery delay from the first
// acquisition: doctor says that no lock can be taken now, points to
// 'redlock init', and exits 69 until it has run.
func TestDoctor_brandNewNodesAreUnavailableUntilInit(t *testing.T) {
	cluster := newFreshCluster(t, 3)
	nodes := strings.Join(cluster.URLs(), ",")
	r := cli(t, "doctor", "--nodes", nodes).expect(t, exitUnavailable, "doctor on brand-new nodes")
	wantDoctorSays(t, r.stdout, "0 of 3 nodes vote now, 2 needed", "run 'redlock init'", "no countdown runs until one reaches it", "UNAVAILABLE")
	if strings.Contains(r.stdout, " left") || !strings.Contains(r.stdout, "recovering, 30s from the next acquisition") {
		t.Errorf("the table shows a countdown that does not run:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "MarkReady") {
		t.Errorf("the remedy names the library's call, not the command:\n%s", r.stdout)
	}
	var report doctorJSON
	cli(t, "doctor", "--nodes", nodes, "--json").expect(t, exitUnavailable, "doctor --json").decode(t, &report)
	if report.Available || report.Unsafe {
		t.Errorf("doctor --json on brand-new nodes: available %v, unsafe %v", report.Available, report.Unsafe)
	}
	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "init")
	cli(t, "doctor", "--nodes", nodes, "--json").expect(t, exitOK, "doctor after init").decode(t, &report)
	if !report.Available {
		t.Errorf("doctor after init: not available: %+v", report)
	}
}

// doctor says the largest TTL the clients can use: the recovery delay it
// was given, with the ways to hold a lock for longer.
func TestDoctor_saysTheLargestTTL(t *testing.T) {
	cluster, _ := newCluster(t, 1)
	r := cli(t, "doctor", "--nodes", cluster.URLs()[0]).expect(t, exitOK, "doctor")
	wantDoctorSays(t, r.stdout, "info", "ttl", "clients of these nodes can use a TTL of at most 30s",
		"remedy: for work longer than that, keep the TTL within it and renew the lock ('redlock run'", "raise --recovery-delay")
	r = cli(t, "doctor", "--nodes", cluster.URLs()[0], "--recovery-delay", "2m").expect(t, exitOK, "doctor --recovery-delay 2m")
	wantDoctorSays(t, r.stdout, "a TTL of at most 2m0s")
}

// A node that refuses the credentials in its URL is a finding of the audit,
// not a reason to stop it: doctor still prints every node's row, names the
// refused one and its remedy, and judges the majority with it counted out.
func TestDoctor_refusedCredentialsAreAFinding(t *testing.T) {
	cluster, _ := newCluster(t, 2)
	nodes := wrongPasswordOnFirst(t, cluster)
	r := cli(t, "doctor", "--nodes", nodes).expect(t, exitFailure, "doctor with a node refusing its credentials")
	wantDoctorSays(t, r.stdout, "refused", "credentials refused: WRONGPASS", "check the user name and password",
		"1 of 2 nodes reachable, 2 needed", cluster.Addrs()[1]+"  up")
	var report doctorJSON
	cli(t, "doctor", "--nodes", nodes, "--json").expect(t, exitFailure, "doctor --json").decode(t, &report)
	checks := map[string]bool{}
	for _, f := range report.Findings {
		checks[f.Check] = true
	}
	if report.Reachable != 1 || !checks["credentials"] || !checks["quorum"] {
		t.Errorf("doctor --json: %d reachable, findings %v; want 1, credentials and quorum", report.Reachable, checks)
	}
}

// A node that refuses its credentials fails the audit even when a majority
// answers: every other verb refuses that node list.
func TestDoctor_refusedCredentialsFailWithAMajority(t *testing.T) {
	cluster, _ := newCluster(t, 3)
	nodes := wrongPasswordOnFirst(t, cluster)
	r := cli(t, "doctor", "--nodes", nodes).expect(t, exitFailure, "doctor with one node of three refusing its credentials")
	// The node answered: the quorum finding does not call it unreachable.
	wantDoctorSays(t, r.stdout, "credentials refused: WRONGPASS", "2 of 3 nodes usable", "fix the nodes that refuse this client's credentials",
		"1 more answered but refused this client's credentials", "UNSAFE")
	var report doctorJSON
	cli(t, "doctor", "--nodes", nodes, "--json").expect(t, exitFailure, "doctor --json").decode(t, &report)
	if !report.Unsafe || report.Available || report.Reachable != 2 {
		t.Errorf("doctor --json: unsafe %v, available %v, %d reachable; want unsafe, not available (no verb takes a lock "+
			"with that node list), 2", report.Unsafe, report.Available, report.Reachable)
	}
	cli(t, "acquire", "--nodes", nodes, "k").expect(t, exitConfig, "acquire with that node list")
}

// wrongPasswordOnFirst sets a password on cluster's first node and returns
// the node list with a wrong one in that node's URL.
func wrongPasswordOnFirst(t *testing.T, cluster *redlocktest.Cluster) string {
	t.Helper()
	if _, err := cluster.Node(0).Do(bg, "CONFIG", "SET", "requirepass", "right"); err != nil {
		t.Fatal(err)
	}
	urls := cluster.URLs()
	urls[0] = strings.Replace(urls[0], "redis://", "redis://:wrong@", 1)
	return strings.Join(urls, ",")
}

// One master of a Redis Cluster given as a plain node is refused by every
// other verb: doctor fails on it too, saying why.
func TestDoctor_clusterMemberWithoutClusterParameter(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	nodes := cluster.URLs()[0]
	r := cli(t, "doctor", "--nodes", nodes).expect(t, exitFailure, "doctor with a cluster member as a plain node")
	wantDoctorSays(t, r.stdout, "one master of a Redis Cluster", "UNSAFE")
	cli(t, "acquire", "--nodes", nodes, "k").expect(t, exitConfig, "acquire with that node list")
}

// With neither --nodes nor $REDLOCK_NODES, a command that cannot reach the
// default node says, once, that it is the default; doctor says it too.
func TestNodes_defaultIsSaid(t *testing.T) {
	cluster, _ := newCluster(t, 1)
	url := cluster.URLs()[0]
	killNodes(t, cluster, 0)
	was := defaultNodes
	defaultNodes = url
	t.Cleanup(func() { defaultNodes = was })
	t.Setenv(envNodes, "")
	os.Unsetenv(envNodes)
	note := cluster.Addrs()[0] + " is the default node: neither --nodes nor $REDLOCK_NODES is set"

	r := cli(t, "acquire", "--wait", "1s", "k").expect(t, exitUnavailable, "acquire --wait 1s of the default node, down")
	if !strings.Contains(r.stderr, `waiting for "k" (0s so far): `+cluster.Addrs()[0]+" error: ") || strings.Count(r.stderr, note) != 1 {
		t.Errorf("acquire --wait 1s of the default node, down: want the note once in the waiting message:\n%s", r.stderr)
	}
	r = cli(t, "acquire", "--wait", "0", "k").expect(t, exitUnavailable, "acquire --wait 0 of the default node, down")
	if strings.Count(r.stderr, note) != 1 {
		t.Errorf("acquire --wait 0 of the default node, down: want the note once:\n%s", r.stderr)
	}
	r = cli(t, "doctor").expect(t, exitFailure, "doctor of the default node, down")
	wantDoctorSays(t, r.stdout, "info      nodes", note, "--nodes URL,URL,... or $REDLOCK_NODES")

	for _, tc := range []struct {
		env  string
		args []string
	}{
		{"", []string{"acquire", "--nodes", url, "--wait", "0", "k"}},
		{url, []string{"acquire", "--wait", "0", "k"}},
		{url, []string{"doctor"}},
	} {
		t.Setenv(envNodes, tc.env)
		if tc.env == "" {
			os.Unsetenv(envNodes)
		}
		if r := cli(t, tc.args...); strings.Contains(r.stdout+r.stderr, "default node") {
			t.Errorf("$%s=%q redlock %s: says the node is the default:\n%s%s", envNodes, tc.env, strings.Join(tc.args, " "), r.stdout, r.stderr)
		}
	}
}

// doctor's table names a Valkey node's own release, not the Redis release
// its INFO says it is compatible with.
func TestServerVersion_valkeyNamed(t *testing.T) {
	if got := serverVersion(doctor.Node{Version: "7.2.4", ValkeyVersion: "8.0.1"}); got != "valkey 8.0.1" {
		t.Errorf("Valkey: %q", got)
	}
	if got := serverVersion(doctor.Node{Version: "7.0.15"}); got != "7.0.15" {
		t.Errorf("Redis: %q", got)
	}
}

package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"
	rueidisclient "github.com/redis/rueidis"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// adapter builds one Conn per node address with one client library.
type adapter struct {
	name  string
	conns func(t testing.TB, addrs []string) []redlock.Conn
}

var adapters = []adapter{
	{"goredis", goredisConns},
	{"rueidis", rueidisConns},
}

func goredisConns(t testing.TB, addrs []string) []redlock.Conn {
	conns := make([]redlock.Conn, len(addrs))
	for i, addr := range addrs {
		o, err := goredis.ParseURL("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = goredis.NewOwned(goredisv9.NewClient(o))
	}
	return conns
}

func rueidisConns(t testing.TB, addrs []string) []redlock.Conn {
	conns := make([]redlock.Conn, len(addrs))
	for i, addr := range addrs {
		c, err := rueidisclient.NewClient(rueidisclient.ClientOption{
			InitAddress:  []string{addr},
			DisableCache: true,
			// A standalone master: skip rueidis's cluster detection.
			ForceSingleClient: true,
		})
		if err != nil {
			t.Fatalf("rueidis client for %s: %v", addr, err)
		}
		conns[i] = rueidis.NewOwned(c)
	}
	return conns
}

// newClient returns a Client over every node of cluster, closed at the end of
// the test. It marks the nodes ready (Client.MarkReady), as an operator does
// for a new deployment, which redlocktest has done already unless the
// cluster is Unmarked; tests of the quarantine start their clusters
// Unmarked and build their clients with redlock.New.
func newClient(t testing.TB, cluster *redlocktest.Cluster, a adapter, opts *redlock.Options) *redlock.Client {
	t.Helper()
	c, err := redlock.New(a.conns(t, cluster.Addrs()), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.MarkReady(context.Background(), false); err != nil {
		t.Fatalf("mark the nodes ready: %v", err)
	}
	loadScripts(t, cluster)
	return c
}

// take acquires key by Acquire, which tries again after an attempt whose
// replies a loaded machine delayed past a short node timeout, for a test
// whose short timeout is for what follows; within 10 s.
func take(t testing.TB, c *redlock.Client, key string, opts ...redlock.LockOption) *redlock.Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, key, opts...)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	return l
}

// dialAdapter stands for goredis.Dial, which makes its own connections
// (for one node with ContextTimeoutEnabled, unlike goredis.New's): see
// newClientOrDial.
var dialAdapter = adapter{"goredis.Dial", func(t testing.TB, addrs []string) []redlock.Conn { return nil }}

// withDial returns the adapters and dialAdapter.
func withDial() []adapter { return append(adapters[:len(adapters):len(adapters)], dialAdapter) }

// newClientOrDial is newClient, but for dialAdapter a Client that
// goredis.Dial makes over the cluster's URLs.
func newClientOrDial(t testing.TB, cluster *redlocktest.Cluster, a adapter, opts *redlock.Options) *redlock.Client {
	t.Helper()
	if a.name != dialAdapter.name {
		return newClient(t, cluster, a, opts)
	}
	c, err := goredis.Dial(context.Background(), cluster.URLs(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.MarkReady(context.Background(), false); err != nil {
		t.Fatalf("mark the nodes ready: %v", err)
	}
	return c
}

// loadScripts puts the library's scripts in every node's script cache, and
// its function library on every node that has functions (Redis 7), as on a
// deployment that has served locks before. On a cold node the first call
// of each script takes two round trips (NOSCRIPT, then EVAL), and the first
// call of a function three (FCALL, FUNCTION LOAD, FCALL), so that a node's
// acquisition can still be running when the call returned on a quorum and
// the test looks at the node.
func loadScripts(t testing.TB, cluster *redlocktest.Cluster) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		if !n.Running() {
			continue
		}
		for _, src := range redlock.ScriptSources {
			if _, err := n.Do(context.Background(), "SCRIPT", "LOAD", src); err != nil {
				t.Fatalf("load a script on node %d: %v", n.Index(), err)
			}
		}
		if !cluster.Version().AtLeast(7, 0) {
			continue
		}
		_, err := n.Do(context.Background(), "FUNCTION", "LOAD", redlock.FunctionLibrary)
		// A server told to answer as Redis 6.2 (see asRedis62) has no
		// FUNCTION.
		if err != nil && !strings.Contains(err.Error(), "already exists") && !strings.Contains(err.Error(), "unknown command") {
			t.Fatalf("load the function library on node %d: %v", n.Index(), err)
		}
	}
}

// needs skips the test where the redis-server the tests start lacks f:
// the tests run against an older release only when PATH puts it first.
func needs(t testing.TB, f redlocktest.Feature) {
	t.Helper()
	if !installedHas(t, f) {
		t.Skipf("the redis-server first on PATH lacks %s", f)
	}
}

// installedHas reports whether the redis-server the tests start has f.
func installedHas(t testing.TB, f redlocktest.Feature) bool {
	t.Helper()
	v, err := redlocktest.ServerVersion("")
	if err != nil {
		t.Fatal(err)
	}
	return v.Has(f)
}

// forEachAdapter runs f once per adapter as a subtest.
func forEachAdapter(t *testing.T, f func(t *testing.T, a adapter)) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) { f(t, a) })
	}
}

// nodesFree counts the nodes of cluster that do not hold key.
func nodesFree(t testing.TB, cluster *redlocktest.Cluster, key string) int {
	t.Helper()
	free := 0
	for _, n := range cluster.Nodes() {
		if keyOn(t, n, key) == "" {
			free++
		}
	}
	return free
}

// keyOn returns the value of key on node n, or "" when it is absent.
func keyOn(t testing.TB, n *redlocktest.Node, key string) string {
	t.Helper()
	v, err := n.Do(context.Background(), "GET", key)
	if errors.Is(err, redlocktest.ErrNil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on node %d: %v", key, n.Index(), err)
	}
	return v
}

// holdingNodes returns the nodes where key holds token, failing the test
// unless they are a majority. Acquire returns at a quorum, so a node may
// never have seen the lock: a test judges only the nodes that did.
func holdingNodes(t *testing.T, cluster *redlocktest.Cluster, key, token string) []*redlocktest.Node {
	t.Helper()
	var held []*redlocktest.Node
	for _, n := range cluster.Nodes() {
		if keyOn(t, n, key) == token {
			held = append(held, n)
		}
	}
	if nodes := len(cluster.Nodes()); len(held) <= nodes/2 {
		t.Fatalf("%s is held on %d of %d nodes after its acquisition, want a majority", key, len(held), nodes)
	}
	return held
}

// quorumError extracts the *QuorumError from err or fails the test.
func quorumError(t testing.TB, err error) *redlock.QuorumError {
	t.Helper()
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v (%T) is not a *QuorumError", err, err)
	}
	return qe
}

// countOutcomes counts the nodes that reported each outcome.
func countOutcomes(qe *redlock.QuorumError) map[redlock.Outcome]int {
	n := map[redlock.Outcome]int{}
	for _, r := range qe.Nodes {
		n[r.Outcome]++
	}
	return n
}

var bg = context.Background()

// fast are options for tests: a per-node timeout generous enough for a
// loaded 2-core machine running the race detector.
func fast() *redlock.Options {
	return &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond}
}

// lasting returns options for a holder whose locks must outlast a test's
// setup (other clients dialled, queued, subscribed) on a busy machine,
// where fast's 2 s TTL may run out first: 30 s, the most the default
// recovery delay allows.
func lasting() *redlock.Options {
	return &redlock.Options{TTL: 30 * time.Second, NodeTimeout: 300 * time.Millisecond}
}

// scriptCalls returns how many scripts every node has run (EVAL, EVALSHA
// and FCALL), by its command statistics.
func scriptCalls(t *testing.T, cluster *redlocktest.Cluster) int {
	t.Helper()
	total := 0
	for _, n := range cluster.Nodes() {
		total += scriptCallsOn(t, n)
	}
	return total
}

// scriptCallsOn returns how many scripts node n has run.
func scriptCallsOn(t *testing.T, n *redlocktest.Node) int {
	t.Helper()
	total := 0
	for line := range strings.Lines(do(t, n, "INFO", "commandstats")) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || (name != "cmdstat_eval" && name != "cmdstat_evalsha" && name != "cmdstat_fcall") {
			continue
		}
		calls, _, _ := strings.Cut(stats, ",")
		v, err := strconv.Atoi(calls)
		if err != nil {
			t.Fatalf("node %d: %q: %v", n.Index(), line, err)
		}
		total += v
	}
	return total
}

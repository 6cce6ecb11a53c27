package redlocktest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/redlocktest"
)

// serverAs writes a redis-server that says it is release version and is
// the installed redis-server otherwise, and returns its path.
func serverAs(t *testing.T, version string) string {
	t.Helper()
	installed, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "redis-server")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = --version ]; then\n\techo 'Redis server v=%s sha=00000000:0 malloc=jemalloc-5.1.0 bits=64 build=1'\n\texit 0\nfi\nexec %q \"$@\"\n", version, installed)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServerVersion reads the release of the binary it is given.
func TestServerVersion(t *testing.T) {
	t.Parallel()
	v, err := redlocktest.ServerVersion(serverAs(t, "6.2.16"))
	if err != nil || v != (redlocktest.Version{Major: 6, Minor: 2, Patch: 16}) {
		t.Fatalf("ServerVersion = %v, %v; want 6.2.16", v, err)
	}
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	v, err = redlocktest.ServerVersion("")
	if err != nil || !strings.Contains(string(out), "v="+v.String()+" ") {
		t.Fatalf("ServerVersion of the installed redis-server = %v, %v; it says %q", v, err, out)
	}
	if _, err := redlocktest.ServerVersion("/nonexistent/redis-server"); err == nil {
		t.Fatal("ServerVersion of a missing binary succeeded")
	}
}

// A redis-server of release 6.2 gets a redis.conf without what 6.2 does
// not know (enable-debug-command, cluster-port): its nodes start, alone
// and as a Redis Cluster with replicas whose buses listen on each port +
// 10000. The binary here is the installed 7.x one saying it is 6.2, which
// takes the 6.2 configuration too.
func TestNew_redis62(t *testing.T) {
	t.Parallel()
	server := serverAs(t, "6.2.16")
	want := redlocktest.Version{Major: 6, Minor: 2, Patch: 16}

	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1, ServerPath: server, Password: "pw"})
	if c.Version() != want {
		t.Fatalf("Version() = %v, want %v", c.Version(), want)
	}
	expect(t, c.Node(0), "OK", "SET", "k", "v")
	checkConf62(t, c.Node(0))

	rc := redlocktest.Start(t, redlocktest.Options{RedisCluster: true, ClusterReplicas: 1, ServerPath: server})
	if rc.Version() != want {
		t.Fatalf("Redis Cluster: Version() = %v, want %v", rc.Version(), want)
	}
	for _, n := range rc.Nodes() {
		checkConf62(t, n)
		if got := clusterInfo(t, n, "cluster_state"); got != "ok" {
			t.Errorf("node %d: cluster_state:%s", n.Index(), got)
		}
		bus := strconv.Itoa(n.Port()) + "@" + strconv.Itoa(n.Port()+10000)
		if nodes := do(t, n, "CLUSTER", "NODES"); !strings.Contains(nodes, bus+" myself,") {
			t.Errorf("node %d: CLUSTER NODES has no %s for itself:\n%s", n.Index(), bus, nodes)
		}
	}
	for _, n := range rc.Nodes()[:3] {
		checkKeyOnOwner(t, rc, n, keyFor(t, rc, n))
	}
}

// checkConf62 checks that the node's redis.conf has nothing Redis 6.2
// does not know.
func checkConf62(t *testing.T, n *redlocktest.Node) {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(n.Dir(), "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, directive := range []string{"enable-debug-command", "cluster-port"} {
		if strings.Contains(string(conf), directive) {
			t.Errorf("node %d: %s in redis.conf for 6.2:\n%s", n.Index(), directive, conf)
		}
	}
}

package redlocktest

import (
	"net"
	"slices"
	"strings"
	"testing"
)

// What `redis-server --version` prints gives the release.
func TestParseVersion(t *testing.T) {
	t.Parallel()
	for out, want := range map[string]Version{
		"Redis server v=6.2.16 sha=00000000:0 malloc=jemalloc-5.1.0 bits=64 build=a6d2e4b0c4d1c5f4\n": {6, 2, 16},
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0\n":  {7, 0, 15},
		"Redis server v=6.0.20 sha=00000000:0 malloc=libc bits=64 build=1\n":                          {6, 0, 20},
		"Redis server v=7.0.0-rc1 sha=00000000:0 malloc=jemalloc-5.2.1 bits=64 build=1\n":             {7, 0, 0},
		"Redis server v=255.255.255 sha=e5b5e0a4:1 malloc=jemalloc-5.3.0 bits=64 build=1\n":           {255, 255, 255},
		"Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1\n":                {8, 0, 1},
		"Redis server v=7.2 sha=00000000:0\n":                                                         {7, 2, 0},
	} {
		got, err := parseVersion(out)
		if err != nil || got != want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", out, got, err, want)
		}
	}
	for _, bad := range []string{"", "redis-server 7.0.15", "Redis server v=x.y.z sha=0", "Redis server v= sha=0"} {
		if v, err := parseVersion(bad); err == nil {
			t.Errorf("parseVersion(%q) = %v, want an error", bad, v)
		}
	}
}

// Releases compare by major, then minor, and have the features of theirs.
func TestVersion_atLeastAndHas(t *testing.T) {
	t.Parallel()
	v62, v70, v72, v8 := Version{6, 2, 16}, Version{7, 0, 0}, Version{7, 2, 5}, Version{8, 0, 0}
	if !v62.AtLeast(6, 2) || v62.AtLeast(7, 0) || !v70.AtLeast(7, 0) || !v72.AtLeast(7, 1) || v72.AtLeast(7, 3) || !v8.AtLeast(7, 2) {
		t.Error("AtLeast compares wrongly")
	}
	for _, f := range []Feature{ShardedPubSub, Functions, ScriptErrorCodes} {
		if v62.Has(f) || !v70.Has(f) || !v8.Has(f) {
			t.Errorf("%v: 6.2 has it %v, 7.0 %v, 8.0 %v; want 7.0 and later only", f, v62.Has(f), v70.Has(f), v8.Has(f))
		}
		if !strings.HasSuffix(f.String(), ", Redis 7.0 and later") {
			t.Errorf("Feature %d is %q, want its release named", f, f.String())
		}
	}
	if v8.Has(Feature(0)) || Feature(0).String() != "Feature(0)" {
		t.Errorf("the zero Feature: Has %v, String %q", v8.Has(Feature(0)), Feature(0).String())
	}
	if v62.String() != "6.2.16" {
		t.Errorf("String() = %q", v62.String())
	}
}

// directives62 are the redis.conf directives Redis 6.2 knows that
// redlocktest writes.
var directives62 = []string{"bind", "port", "protected-mode", "daemonize", "dir", "logfile", "databases", "save",
	"appendonly", "appendfsync", "requirepass", "cluster-enabled", "cluster-config-file", "cluster-node-timeout",
	"repl-diskless-sync-delay"}

// directives returns the directive of each line of a configuration file.
func directives(conf string) []string {
	var names []string
	for line := range strings.Lines(conf) {
		if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); name != "" {
			names = append(names, name)
		}
	}
	return names
}

// A node's redis.conf has the directives of its release only: 6.2 has no
// enable-debug-command (DEBUG is always on there) and no cluster-port (the
// bus listens on the port + 10000); 7.0 and later have both.
func TestNodeConfig_byVersion(t *testing.T) {
	t.Parallel()
	for _, v := range []Version{{6, 2, 16}, {6, 0, 20}} {
		for _, cluster := range []bool{false, true} {
			conf := nodeConfig{version: v, aof: true, password: "pw", cluster: cluster}.render(21000, 31000, "/tmp/n")
			for _, name := range directives(conf) {
				if !slices.Contains(directives62, name) {
					t.Errorf("%v, cluster %v: directive %s, which Redis 6.2 does not know, in\n%s", v, cluster, name, conf)
				}
			}
			if cluster && !strings.Contains(conf, "cluster-enabled yes\n") {
				t.Errorf("%v: a Redis Cluster node without cluster-enabled:\n%s", v, conf)
			}
		}
	}
	for _, v := range []Version{{7, 0, 15}, {7, 2, 4}, {8, 0, 1}} {
		conf := nodeConfig{version: v, cluster: true}.render(21000, 31001, "/tmp/n")
		for _, line := range []string{"enable-debug-command local\n", "cluster-port 31001\n", "cluster-enabled yes\n"} {
			if !strings.Contains(conf, line) {
				t.Errorf("%v: no %q in\n%s", v, line, conf)
			}
		}
	}
	conf := nodeConfig{version: Version{7, 0, 15}, extra: []string{"hz 50"}}.render(21000, 0, "/tmp/n")
	if strings.Contains(conf, "cluster-") || !strings.HasSuffix(conf, "\nhz 50\n") {
		t.Errorf("a node outside a Redis Cluster:\n%s", conf)
	}
}

// A Sentinel's configuration has no directive that depends on the release.
func TestSentinelConfig_directives(t *testing.T) {
	t.Parallel()
	conf := sentinelConfig(26379, "/tmp/s", SentinelOptions{Masters: map[string]int{"locks": 6379}, Password: "pw"})
	for _, name := range directives(conf) {
		if !slices.Contains([]string{"bind", "port", "daemonize", "dir", "logfile", "requirepass", "sentinel"}, name) {
			t.Errorf("directive %s in\n%s", name, conf)
		}
	}
}

// Before 7.0, a Redis Cluster node's bus listens on its port + 10000,
// which is free when the node starts, below the ephemeral range where the
// kernel has one.
func TestPickPorts_busPortBefore70(t *testing.T) {
	t.Parallel()
	low, hasRange := ephemeralLow()
	for range 20 {
		n := &Node{conf: nodeConfig{version: Version{6, 2, 16}, cluster: true}}
		if err := n.pickPorts(); err != nil {
			t.Fatal(err)
		}
		// Not checked again for being free: the package's other tests,
		// run in parallel, start nodes on random ports of the same range,
		// and one may take either port once it is picked.
		if n.busPort != n.port+busOffset {
			t.Fatalf("port %d, bus port %d: want the bus on port + %d", n.port, n.busPort, busOffset)
		}
		if hasRange && low-busOffset > minPort && n.busPort >= low {
			t.Fatalf("bus port %d in the ephemeral range from %d", n.busPort, low)
		}
	}
	n := &Node{conf: nodeConfig{version: Version{7, 0, 15}, cluster: true}}
	if err := n.pickPorts(); err != nil || n.busPort == n.port || n.busPort == 0 {
		t.Fatalf("7.0: port %d, bus port %d, %v; want two ports", n.port, n.busPort, err)
	}
}

// freePort picks a port only when its bus port (port + offset) is free
// too.
func TestPortsFree_busPortTaken(t *testing.T) {
	t.Parallel()
	const offset = 7
	var bus net.Listener
	var port, busPort int
	// Under a parallel test run most ports of the other parity than the
	// kernel's picks are outgoing connections' for a while: try many.
	for range 500 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		busPort = l.Addr().(*net.TCPAddr).Port
		if port = busPort - offset; portFree(port) {
			bus = l
			break
		}
		l.Close() // port is another program's: try another pair
	}
	if bus == nil {
		t.Fatal("no free port below a free port")
	}
	defer bus.Close()
	if portsFree(port, offset) {
		t.Errorf("port %d with its bus port %d taken: reported free", port, busPort)
	}
}

// Without CLUSTER ADDSLOTSRANGE (before 7.0), CLUSTER ADDSLOTS names every
// slot that the node does not have yet.
func TestAddSlotsArgs_before70(t *testing.T) {
	t.Parallel()
	got := addSlotsArgs(SlotRange{First: 100, Last: 105}, []SlotRange{{102, 103}}, false)
	if want := []string{"CLUSTER", "ADDSLOTS", "100", "101", "104", "105"}; !slices.Equal(got, want) {
		t.Errorf("addSlotsArgs = %q, want %q", got, want)
	}
	if got := addSlotsArgs(SlotRange{First: 0, Last: 5460}, nil, false); len(got) != 2+5461 || got[2] != "0" || got[len(got)-1] != "5460" {
		t.Errorf("addSlotsArgs of 0-5460: %d arguments, %q ... %q", len(got), got[:3], got[len(got)-1])
	}
}

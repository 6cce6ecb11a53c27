package cli

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// A Sentinel-managed master given as a node URL, with more Sentinels in
// addr parameters, is set up by init and audited by doctor like a server.
func TestDoctor_sentinelNode(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	others := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	first, second := startSentinel(t, master.Node(0).Port()), startSentinel(t, master.Node(0).Port())
	node := fmt.Sprintf("redis://%s?master_name=locks&addr=%s", first, second)
	nodes := strings.Join(append([]string{node}, others.URLs()...), ",")
	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "init with a Sentinel node")
	r := cli(t, "doctor", "--nodes", nodes).expect(t, exitOK, "doctor with a Sentinel node")
	wantDoctorSays(t, r.stdout, "locks@sentinel:"+first+","+second+"  up", "3 of 3 nodes reachable")
}

// startSentinel starts a redis-sentinel process on a free loopback port,
// monitoring the master at masterPort as "locks", and returns its address.
// It is stopped when the test ends.
func startSentinel(t *testing.T, masterPort int) string {
	t.Helper()
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Fatal("redis-sentinel not found: install it (apt-get install -y redis-sentinel); test.sh does")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	lines := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor locks 127.0.0.1 %d 1\n",
		l.Addr().(*net.TCPAddr).Port, dir, masterPort)
	if err := os.WriteFile(conf, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-sentinel did not start listening within 10 s")
		}
	}
}

package redlock_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// startSentinel starts a redis-sentinel process on a free loopback port
// that monitors the master at masterPort as "locks", with a quorum of one
// and a short down-after, with the extra configuration lines, and returns
// its port. It is stopped when the test ends.
func startSentinel(t *testing.T, masterPort int, extra ...string) int {
	t.Helper()
	return startSentinelOf(t, map[string]int{"locks": masterPort}, extra...)
}

// startSentinelOf starts a redis-sentinel process as startSentinel does,
// monitoring each master of masters (name to port), and returns its port.
func startSentinelOf(t *testing.T, masters map[string]int, extra ...string) int {
	t.Helper()
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Fatal("redis-sentinel not found: install it (apt-get install -y redis-sentinel); test.sh does")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	lines := []string{
		"port " + strconv.Itoa(port), "bind 127.0.0.1", "dir " + dir,
	}
	for name, masterPort := range masters {
		lines = append(lines, fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1", name, masterPort),
			"sentinel down-after-milliseconds "+name+" 500",
			"sentinel failover-timeout "+name+" 3000")
	}
	lines = append(lines, extra...)
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-sentinel did not start listening within 10 s")
		}
	}
}

// A node given as a Sentinel-managed master locks through whichever
// process is the master, and follows a failover: the promoted replica is
// another process, so it does not grant the lock its old master held
// (the restart quarantine keeps it out). Both adapters take the URL.
func TestSentinel_nodeFollowsFailover(t *testing.T) {
	forEachDialer(t, func(t *testing.T, d dialer) {
		master := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		replica := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
			Config: []string{"replicaof 127.0.0.1 " + strconv.Itoa(master.Node(0).Port())}})
		waitSynced(t, replica.Node(0))
		sentinel := startSentinel(t, master.Node(0).Port())
		url := fmt.Sprintf("redis://127.0.0.1:%d?master_name=locks", sentinel)
		opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, RecoveryDelay: 5 * time.Second}
		holder, err := d.dial(bg, []string{url}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if err := holder.MarkReady(bg, false); err != nil {
			t.Fatal(err)
		}
		if states, err := holder.Inspect(bg, "job"); err != nil || !strings.HasPrefix(states[0].Node, "locks@sentinel:") {
			t.Errorf("Inspect: %+v, %v; want the node named after the master and the Sentinels", states, err)
		}
		lock, err := holder.TryAcquire(bg, "job")
		if err != nil {
			t.Fatalf("acquire through Sentinel: %v", err)
		}
		if v, _ := master.Node(0).Do(bg, "GET", "job"); v != lock.Token() {
			t.Fatalf("the master holds %q, want the lock's token", v)
		}

		if err := master.Node(0).Kill(); err != nil {
			t.Fatal(err)
		}
		waitPromoted(t, sentinel, replica.Node(0).Port())
		other, err := d.dial(bg, []string{url}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, err = other.TryAcquire(bg, "job")
		qe := quorumError(t, err)
		t.Logf("after the failover: %v", qe.Nodes[0])
		if o := qe.Nodes[0].Outcome; o != redlock.OutcomeRecovering && o != redlock.OutcomeHeld {
			t.Fatalf("the promoted replica answered %v, want recovering (or held)", qe.Nodes[0])
		}
	})
}

// A Sentinel URL carries the Sentinels' password in its userinfo and the
// master's in its password parameter, with either adapter; a wrong master
// password fails Dial, naming the node and without the passwords.
func TestSentinel_passwords(t *testing.T) {
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Password: "master-pw"})
	sentinel := startSentinel(t, master.Node(0).Port(), "requirepass sentinel-pw", "sentinel auth-pass locks master-pw")
	url := fmt.Sprintf("redis://:sentinel-pw@127.0.0.1:%d?master_name=locks&password=", sentinel)
	forEachDialer(t, func(t *testing.T, d dialer) {
		client, err := d.dial(bg, []string{url + "master-pw"}, fast())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		if err := client.MarkReady(bg, false); err != nil {
			t.Fatal(err)
		}
		lock, err := client.TryAcquire(bg, "job")
		if err != nil {
			t.Fatalf("acquire through a Sentinel with passwords: %v", err)
		}
		lock.Release(bg)

		_, err = d.dial(bg, []string{url + "not-it-pw"}, nil)
		if err == nil || !strings.Contains(err.Error(), "locks@sentinel:") || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("Dial with a wrong master password: %v, want the node's WRONGPASS", err)
		}
		if err != nil && strings.Contains(err.Error(), "-pw") {
			t.Errorf("error shows a password: %v", err)
		}
	})
}

// waitSynced waits until n is a replica whose link to its master is up.
func waitSynced(t *testing.T, n *redlocktest.Node) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, err := n.Do(bg, "INFO", "replication"); err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica never synced")
		}
	}
}

// waitPromoted waits until the Sentinel on port names the server on
// replicaPort as the master "locks".
func waitPromoted(t *testing.T, port, replicaPort int) {
	t.Helper()
	waitPromotedAs(t, port, "locks", replicaPort)
}

// waitPromotedAs waits until the Sentinel on port names the server on
// replicaPort as the master called name.
func waitPromotedAs(t *testing.T, port int, name string, replicaPort int) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if reply := rawCommand(addr, "SENTINEL get-master-addr-by-name "+name); strings.Contains(reply, strconv.Itoa(replicaPort)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the Sentinel did not promote the replica within 20 s")
		}
	}
}

// rawCommand sends an inline command to addr and returns what arrives
// within a short while, or "".
func rawCommand(addr, command string) string {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(command + "\r\n")); err != nil {
		return ""
	}
	buf := make([]byte, 512)
	n, _ := c.Read(buf)
	return string(buf[:n])
}

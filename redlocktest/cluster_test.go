package redlocktest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// do runs a command that must succeed and returns its reply.
func do(t *testing.T, n *redlocktest.Node, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	reply, err := n.Do(ctx, args...)
	if err != nil {
		t.Fatalf("node %d: %v: %v", n.Index(), args, err)
	}
	return reply
}

// expect runs a command that must succeed with the reply want.
func expect(t *testing.T, n *redlocktest.Node, want string, args ...string) {
	t.Helper()
	if got := do(t, n, args...); got != want {
		t.Fatalf("node %d: %v = %q, want %q", n.Index(), args, got, want)
	}
}

// rawPing sends PING over a new connection without AUTH and returns the
// first reply line.
func rawPing(t *testing.T, addr string, timeout time.Duration) (string, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestSetGetOnEveryNode(t *testing.T) {
	t.Parallel()
	// Unmarked: no restart marker beside the test's keys.
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Unmarked: true})
	nodes := c.Nodes()
	if len(nodes) != 3 {
		t.Fatalf("len(Nodes()) = %d, want 3", len(nodes))
	}
	addrs, urls := c.Addrs(), c.URLs()
	seen := map[string]bool{}
	for i, n := range nodes {
		if n.Index() != i || c.Node(i) != n {
			t.Fatalf("node %d: Index() = %d, Node(%d) = %p, want %p", i, n.Index(), i, c.Node(i), n)
		}
		if want := fmt.Sprintf("127.0.0.1:%d", n.Port()); n.Addr() != want || addrs[i] != want {
			t.Fatalf("node %d: Addr() = %q, Addrs()[%d] = %q, want %q", i, n.Addr(), i, addrs[i], want)
		}
		if want := "redis://" + n.Addr(); n.URL() != want || urls[i] != want {
			t.Fatalf("node %d: URL() = %q, URLs()[%d] = %q, want %q", i, n.URL(), i, urls[i], want)
		}
		if seen[n.Addr()] {
			t.Fatalf("node %d: duplicate address %s", i, n.Addr())
		}
		seen[n.Addr()] = true
		if !n.Running() || n.Paused() || n.PID() == 0 {
			t.Fatalf("node %d: Running() = %v, Paused() = %v, PID() = %d", i, n.Running(), n.Paused(), n.PID())
		}
		if filepath.Base(n.Dir()) != fmt.Sprintf("node-%d", i) {
			t.Fatalf("node %d: Dir() = %q", i, n.Dir())
		}
		expect(t, n, "OK", "SET", "key", fmt.Sprintf("value-%d", i))
	}
	// Every node is a separate server with its own data.
	for i, n := range nodes {
		expect(t, n, fmt.Sprintf("value-%d", i), "GET", "key")
		expect(t, n, "1", "DBSIZE")
	}
}

func TestZeroOptionsStartsFiveNodesFast(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := redlocktest.Start(t, redlocktest.Options{})
	elapsed := time.Since(begin)
	t.Logf("5 nodes started in %v", elapsed)
	if len(c.Nodes()) != 5 {
		t.Fatalf("len(Nodes()) = %d, want 5", len(c.Nodes()))
	}
	if elapsed > 3*time.Second {
		t.Errorf("starting 5 nodes took %v, want well under a second", elapsed)
	}
	for _, n := range c.Nodes() {
		expect(t, n, "appendonly\nno", "CONFIG", "GET", "appendonly")
		expect(t, n, "save\n", "CONFIG", "GET", "save")
	}
}

func TestKillRefusesConnectionsAndStartComesBackEmpty(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := c.Node(0)
	port, oldPID := n.Port(), n.PID()
	expect(t, n, "OK", "SET", "key", "value")

	if err := n.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if n.Running() || n.PID() != 0 {
		t.Fatalf("after Kill: Running() = %v, PID() = %d", n.Running(), n.PID())
	}
	if err := syscall.Kill(oldPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("after Kill: kill(%d, 0) = %v, want ESRCH", oldPID, err)
	}
	if _, err := n.Do(t.Context(), "PING"); !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, redlocktest.ErrNotRunning) {
		t.Fatalf("PING after Kill: err = %v, want connection refused and ErrNotRunning", err)
	}
	for name, f := range map[string]func() error{"Kill": n.Kill, "Stop": n.Stop, "Pause": n.Pause, "Resume": n.Resume} {
		if err := f(); !errors.Is(err, redlocktest.ErrNotRunning) {
			t.Errorf("%s on a killed node: err = %v, want ErrNotRunning", name, err)
		}
	}

	if err := n.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if n.Port() != port || !n.Running() || n.PID() == oldPID {
		t.Fatalf("after Start: Port() = %d (was %d), Running() = %v, PID() = %d (was %d)", n.Port(), port, n.Running(), n.PID(), oldPID)
	}
	if reply, err := n.Do(t.Context(), "GET", "key"); !errors.Is(err, redlocktest.ErrNil) || reply != "" {
		t.Fatalf("GET after restart = %q, %v; want \"\", ErrNil", reply, err)
	}
	expect(t, n, "0", "DBSIZE")
	if err := n.Start(t.Context()); err == nil {
		t.Fatal("Start on a running node succeeded")
	}
}

func TestStopWithoutPersistenceLosesData(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := c.Node(0)
	expect(t, n, "OK", "SET", "key", "value")
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if n.Running() {
		t.Fatal("Running() after Stop")
	}
	if err := n.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	expect(t, n, "0", "DBSIZE")
}

func TestAppendFsyncAlwaysSurvivesKill(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1, AppendFsyncAlways: true})
	n := c.Node(0)
	expect(t, n, "appendfsync\nalways", "CONFIG", "GET", "appendfsync")
	expect(t, n, "OK", "SET", "key", "value")
	oldPID := n.PID()
	if err := n.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if n.PID() == oldPID {
		t.Fatalf("Restart kept pid %d", oldPID)
	}
	expect(t, n, "value", "GET", "key")

	expect(t, n, "OK", "SET", "key2", "value2")
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := n.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	expect(t, n, "value2", "GET", "key2")
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := c.Node(0)
	if err := n.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if !n.Paused() || !n.Running() {
		t.Fatalf("after Pause: Paused() = %v, Running() = %v", n.Paused(), n.Running())
	}
	var netErr net.Error
	if reply, err := rawPing(t, n.Addr(), 200*time.Millisecond); !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("PING on a paused node = %q, %v; want a timeout", reply, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := n.Do(ctx, "PING"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do(PING) on a paused node: err = %v, want DeadlineExceeded", err)
	}

	if err := n.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if n.Paused() {
		t.Fatal("Paused() after Resume")
	}
	if reply, err := rawPing(t, n.Addr(), 2*time.Second); err != nil || reply != "+PONG" {
		t.Fatalf("PING after Resume = %q, %v; want +PONG", reply, err)
	}
}

func TestKillAndStopOfPausedNodeArePrompt(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	for i, stop := range []func(*redlocktest.Node) error{(*redlocktest.Node).Kill, (*redlocktest.Node).Stop} {
		n := c.Node(i)
		if err := n.Pause(); err != nil {
			t.Fatalf("Pause: %v", err)
		}
		begin := time.Now()
		if err := stop(n); err != nil {
			t.Fatalf("node %d: stopping a paused node: %v", i, err)
		}
		if elapsed := time.Since(begin); elapsed > time.Second {
			t.Errorf("node %d: stopping a paused node took %v", i, elapsed)
		}
		if n.Running() || n.Paused() {
			t.Fatalf("node %d: Running() = %v, Paused() = %v after stop", i, n.Running(), n.Paused())
		}
		if err := n.Start(t.Context()); err != nil {
			t.Fatalf("node %d: Start: %v", i, err)
		}
		expect(t, n, "PONG", "PING")
	}
}

func TestPassword(t *testing.T) {
	t.Parallel()
	const password = `s3cr@t "pass" \word`
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 2, Password: password})
	for i, n := range c.Nodes() {
		u, err := url.Parse(n.URL())
		if err != nil {
			t.Fatalf("node %d: URL() = %q: %v", i, n.URL(), err)
		}
		if pw, _ := u.User.Password(); u.Scheme != "redis" || u.Host != n.Addr() || pw != password || u.User.Username() != "" {
			t.Fatalf("node %d: URL() = %q, want redis://:<password>@%s", i, n.URL(), n.Addr())
		}
		if c.URLs()[i] != n.URL() {
			t.Fatalf("node %d: URLs()[%d] = %q, want %q", i, i, c.URLs()[i], n.URL())
		}
		if reply, err := rawPing(t, n.Addr(), 2*time.Second); err != nil || !strings.HasPrefix(reply, "-NOAUTH") {
			t.Fatalf("node %d: PING without AUTH = %q, %v; want -NOAUTH", i, reply, err)
		}
		expect(t, n, "PONG", "PING")
	}
	n := c.Node(0)
	if err := n.Restart(t.Context()); err != nil {
		t.Fatalf("Restart with a password: %v", err)
	}
	expect(t, n, "PONG", "PING")
}

func TestConfigLinesAndDebug(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Config: []string{"maxmemory-policy volatile-lru", "hz 50"}})
	n := c.Node(0)
	expect(t, n, "maxmemory-policy\nvolatile-lru", "CONFIG", "GET", "maxmemory-policy")
	expect(t, n, "hz\n50", "CONFIG", "GET", "hz")
	expect(t, n, "databases\n16", "CONFIG", "GET", "databases")
	expect(t, n, "OK", "DEBUG", "SLEEP", "0")
}

func TestDoReplies(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := c.Node(0)
	expect(t, n, "OK", "SET", "k", "a b\r\nc")
	expect(t, n, "a b\r\nc", "GET", "k")
	expect(t, n, "OK", "SET", "empty", "")
	expect(t, n, "", "GET", "empty")
	expect(t, n, "1", "INCR", "counter")
	expect(t, n, "-5", "DECRBY", "counter", "6")
	expect(t, n, "2", "RPUSH", "list", "x", "y")
	expect(t, n, "x\ny", "LRANGE", "list", "0", "-1")
	expect(t, n, "a b\r\nc\n", "MGET", "k", "missing")
	expect(t, n, "OK", "SET", "lock", "token", "NX", "PX", "100000")
	if reply, err := n.Do(t.Context(), "SET", "lock", "other", "NX", "PX", "1000"); !errors.Is(err, redlocktest.ErrNil) || reply != "" {
		t.Fatalf("SET NX on an existing key = %q, %v; want \"\", ErrNil", reply, err)
	}
	if ttl := do(t, n, "PTTL", "lock"); ttl == "-1" || ttl == "-2" || strings.HasPrefix(ttl, "0") {
		t.Fatalf("PTTL lock = %s", ttl)
	}
	if reply, err := n.Do(t.Context(), "GET", "missing"); err != redlocktest.ErrNil || reply != "" {
		t.Fatalf("GET missing = %q, %v; want \"\", ErrNil", reply, err)
	}
	_, err := n.Do(t.Context(), "NOSUCHCOMMAND")
	var serverErr redlocktest.ServerError
	if !errors.As(err, &serverErr) || !strings.HasPrefix(string(serverErr), "ERR unknown command") {
		t.Fatalf("unknown command: err = %v, want a ServerError", err)
	}
	if _, err := n.Do(t.Context()); err == nil {
		t.Fatal("Do without a command succeeded")
	}
	expect(t, n, "OK", "FLUSHALL")
	expect(t, n, "0", "DBSIZE")
}

func TestCloseStopsProcessesAndRemovesTempDir(t *testing.T) {
	t.Parallel()
	c, err := redlocktest.New(t.Context(), redlocktest.Options{Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(c.Node(0).Dir())
	var pids []int
	for _, n := range c.Nodes() {
		pids = append(pids, n.PID())
	}
	if err := c.Node(1).Pause(); err != nil {
		t.Fatal(err)
	}
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}

	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("temp dir %s after Close: stat err = %v, want not exist", dir, err)
	}
	for i, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("node %d: kill(%d, 0) after Close = %v, want ESRCH", i, pid, err)
		}
		if n := c.Node(i); n.Running() || n.PID() != 0 {
			t.Errorf("node %d: Running() = %v, PID() = %d after Close", i, n.Running(), n.PID())
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.Node(0).Start(t.Context()); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func TestCloseKeepsCallerDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := redlocktest.New(t.Context(), redlocktest.Options{Nodes: 1, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Node(0).Dir(), filepath.Join(dir, "node-0"); got != want {
		t.Fatalf("Dir() = %q, want %q", got, want)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"redis.conf", "redis.log"} {
		if _, err := os.Stat(filepath.Join(dir, "node-0", name)); err != nil {
			t.Errorf("after Close: %v", err)
		}
	}
}

func TestRestartWaitsForTakenPort(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := c.Node(0)
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", n.Addr())
	if err != nil {
		t.Fatalf("take the port: %v", err)
	}
	begin := time.Now()
	err = n.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "Address already in use") {
		l.Close()
		t.Fatalf("Start on a taken port: err = %v, want address already in use", err)
	}
	// It retries for about 2 s; the upper bound only tells "gave up" from
	// "retries for ever", with room for a loaded machine.
	if elapsed := time.Since(begin); elapsed < time.Second || elapsed > 15*time.Second {
		t.Errorf("Start on a taken port gave up after %v, want about 2s", elapsed)
	}

	// Release the port while Start is retrying.
	time.AfterFunc(300*time.Millisecond, func() { l.Close() })
	begin = time.Now()
	if err := n.Start(t.Context()); err != nil {
		t.Fatalf("Start after the port is released: %v", err)
	}
	t.Logf("Start succeeded %v after it began, the port was released after 300ms", time.Since(begin))
	expect(t, n, "PONG", "PING")
}

func TestStartupErrorQuotesOutput(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c, err := redlocktest.New(t.Context(), redlocktest.Options{Nodes: 2, Config: []string{"no-such-directive yes"}})
	if err == nil {
		c.Close()
		t.Fatal("New with a bad config line succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-directive") {
		t.Fatalf("error does not quote redis-server's output: %v", err)
	}
	if elapsed := time.Since(begin); elapsed > 3*time.Second {
		t.Errorf("failing start took %v", elapsed)
	}
}

func TestMissingServerFailsWithInstallHint(t *testing.T) {
	const hint = "apt-get install -y redis-server"
	_, err := redlocktest.New(t.Context(), redlocktest.Options{ServerPath: "/nonexistent/redis-server"})
	if err == nil || !strings.Contains(err.Error(), hint) {
		t.Fatalf("New with a missing ServerPath: err = %v, want it to mention %q", err, hint)
	}

	t.Setenv("PATH", t.TempDir())
	ft := &fakeTB{TB: t}
	if c := redlocktest.Start(ft, redlocktest.Options{}); c != nil {
		t.Fatal("Start without redis-server on PATH returned a cluster")
	}
	if !ft.failed || ft.skipped || !strings.Contains(ft.msg, hint) {
		t.Fatalf("Start without redis-server: failed = %v, skipped = %v, message %q; want a failure mentioning %q", ft.failed, ft.skipped, ft.msg, hint)
	}
}

// fakeTB records Fatal and Skip calls instead of ending the test.
type fakeTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (f *fakeTB) Fatal(args ...any) { f.failed, f.msg = true, fmt.Sprint(args...) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
}
func (f *fakeTB) Skip(...any)          { f.skipped = true }
func (f *fakeTB) Skipf(string, ...any) { f.skipped = true }
func (f *fakeTB) SkipNow()             { f.skipped = true }

func TestConcurrentLifecycle(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	n := c.Node(0)
	ops := []func() error{
		n.Kill, n.Stop, n.Pause, n.Resume,
		func() error { return n.Start(t.Context()) },
		func() error { return n.Restart(t.Context()) },
		func() error { n.Running(); n.Paused(); n.PID(); return nil },
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 15 {
				_ = ops[(g*7+i*3)%len(ops)]()
			}
		})
	}
	wg.Wait()
	if err := n.Resume(); err != nil && !errors.Is(err, redlocktest.ErrNotRunning) {
		t.Fatal(err)
	}
	if !n.Running() {
		if err := n.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, n, "PONG", "PING")
}

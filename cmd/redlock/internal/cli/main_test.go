package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/redlocktest"
)

// binary is the redlock command built for the end-to-end tests.
var binary string

type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == watchdogVerb {
		// A run in this process started the test binary as its
		// watchdog (os.Executable): it must watch, not run the tests.
		os.Exit(watchdog(os.Stdin, os.Stdout, os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == holdVerb {
		// An elect without a command in this process started the test
		// binary to hold the lead (os.Executable).
		os.Exit(hold(os.Stdout))
	}
	redis.SetLogger(quietLog{}) // dial failures to killed nodes are expected
	// The tests send the commands they start SIGHUP, as a terminal's
	// hangup would. Run under nohup, this process ignores it, and so
	// would every command it starts: an ignored signal stays ignored
	// across exec. Caught here, it reaches them with its default action.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	dir, err := os.MkdirTemp("", "redlock-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "redlock")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/redlock-go/redlock/cmd/redlock")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building the redlock command: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var bg = context.Background()

// result is what one invocation of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the command in-process.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(bg, args, strings.NewReader(""), &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// expect fails the test unless r exited with want.
func (r result) expect(t *testing.T, want int, what string) result {
	t.Helper()
	if r.code != want {
		t.Fatalf("%s: exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, want, r.stdout, r.stderr)
	}
	return r
}

// decode parses r's stdout as JSON into v.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
}

// newFreshCluster starts n redis-server nodes as a brand-new deployment:
// their restart quarantine is on until 'redlock init'.
func newFreshCluster(t *testing.T, n int) *redlocktest.Cluster {
	t.Helper()
	return redlocktest.Start(t, redlocktest.Options{Nodes: n, Unmarked: true})
}

// newCluster starts n redis-server nodes and marks them ready with
// 'redlock init', as a brand-new deployment must be. It returns the cluster
// and the --nodes value.
func newCluster(t *testing.T, n int) (*redlocktest.Cluster, string) {
	t.Helper()
	c := newFreshCluster(t, n)
	nodes := strings.Join(c.URLs(), ",")
	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "redlock init")
	return c, nodes
}

// binaryCommand returns the built redlock command with args, its environment
// pointing at nodes.
func binaryCommand(nodes string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), envNodes+"="+nodes)
	return cmd
}

// runBinary runs the built command to the end.
func runBinary(t *testing.T, nodes string, args ...string) result {
	t.Helper()
	cmd := binaryCommand(nodes, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running redlock %s: %v", strings.Join(args, " "), err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// waitForFile waits until path exists and returns its content.
func waitForFile(t *testing.T, path string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 && bytes.HasSuffix(b, []byte("\n")) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s", path, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// keyOn returns key's value on node n, "" when absent.
func keyOn(t *testing.T, n *redlocktest.Node, key string) string {
	t.Helper()
	v, err := n.Do(bg, "GET", key)
	if errors.Is(err, redlocktest.ErrNil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on node %d: %v", key, n.Index(), err)
	}
	return v
}

// assertReleased fails the test unless a majority of the cluster's nodes no
// longer hold key: the lock is free. (A node that did not answer the release
// within the node timeout, on a loaded machine, keeps its copy until the TTL.)
func assertReleased(t *testing.T, c *redlocktest.Cluster, key, when string) {
	t.Helper()
	var holding []int
	for _, n := range c.Nodes() {
		if !n.Running() {
			continue
		}
		if v := keyOn(t, n, key); v != "" {
			holding = append(holding, n.Index())
		}
	}
	if nodes := len(c.Nodes()); len(holding) > nodes-(nodes/2+1) {
		t.Errorf("%s: nodes %v still hold %q, a majority", when, holding, key)
	}
}

// assertHeld fails the test unless a majority of the cluster's nodes hold key
// with token.
func assertHeld(t *testing.T, c *redlocktest.Cluster, key, token, when string) {
	t.Helper()
	var other []string
	for _, n := range c.Nodes() {
		if v := keyOn(t, n, key); v != token {
			other = append(other, fmt.Sprintf("node %d has %q", n.Index(), v))
		}
	}
	if nodes := len(c.Nodes()); len(other) > nodes-(nodes/2+1) {
		t.Errorf("%s: %q is not held by %s on a majority: %s", when, key, token, strings.Join(other, ", "))
	}
}

// startCommand starts the built command with args on nodes, its stderr
// kept, killed at the end of the test, and waits for it to write the file
// started.
func startCommand(t *testing.T, nodes, started string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd, stderr := startRun(t, nodes, args...)
	waitForFile(t, started, 10*time.Second)
	return cmd, stderr
}

// killNodes kills the nodes of cluster numbered in which.
func killNodes(t *testing.T, cluster *redlocktest.Cluster, which ...int) {
	t.Helper()
	for _, i := range which {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
}

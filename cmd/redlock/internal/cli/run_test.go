package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

func TestRun_exitStatusPropagates(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"success", []string{"k", "--", "true"}, 0},
		{"failure", []string{"k", "--", "sh", "-c", "exit 7"}, 7},
		{"shell", []string{"--shell", "k", "--", "exit", "3"}, 3},
		{"without --", []string{"k", "sh", "-c", "exit 4"}, 4},
		{"killed by a signal", []string{"k", "--", "sh", "-c", "kill -KILL $$"}, exitSignalBase + int(syscall.SIGKILL)},
		{"not found", []string{"k", "--", "/nonexistent/command"}, exitNotFound},
		{"not executable", []string{"k", "--", "/etc/hostname"}, exitCannotExecute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, nodes, append([]string{"run"}, tc.args...)...)
			if r.code != tc.want {
				t.Fatalf("exit status %d, want %d\n%s", r.code, tc.want, r.stderr)
			}
			assertReleased(t, cluster, "k", "after the command ended")
		})
	}
}

func TestRun_stdinPassedThrough(t *testing.T) {
	_, nodes := newCluster(t, 3)
	cmd := binaryCommand(nodes, "run", "--shell", "k", "--", "tr a-z A-Z")
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "HELLO\n" {
		t.Errorf("output %q, want %q", out, "HELLO\n")
	}
}

func TestRun_conflict(t *testing.T) {
	_, nodes := newCluster(t, 3)
	held := cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "20s", "busy").expect(t, exitOK, "acquire")
	var lock acquiredJSON
	held.decode(t, &lock)

	t.Run("no wait", func(t *testing.T) {
		start := time.Now()
		r := runBinary(t, nodes, "run", "--wait", "0", "busy", "--", "touch", filepath.Join(t.TempDir(), "ran"))
		if r.code != exitConflict {
			t.Fatalf("exit status %d, want %d\n%s", r.code, exitConflict, r.stderr)
		}
		if !strings.Contains(r.stderr, "held by another holder") {
			t.Errorf("stderr does not say who holds it:\n%s", r.stderr)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("--wait 0 took %s", took)
		}
	})
	t.Run("command not run", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "ran")
		runBinary(t, nodes, "run", "--wait", "0", "busy", "--", "touch", marker)
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the command ran without the lock")
		}
	})
	t.Run("custom code", func(t *testing.T) {
		r := runBinary(t, nodes, "run", "--wait", "0", "--conflict-exit-code", "9", "busy", "--", "true")
		if r.code != 9 {
			t.Fatalf("exit status %d, want 9\n%s", r.code, r.stderr)
		}
	})
	t.Run("wait timeout", func(t *testing.T) {
		start := time.Now()
		r := runBinary(t, nodes, "run", "--wait", "300ms", "busy", "--", "true")
		if r.code != exitConflict {
			t.Fatalf("exit status %d, want %d\n%s", r.code, exitConflict, r.stderr)
		}
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Errorf("gave up after %s, before --wait", took)
		}
	})
	t.Run("waits for the release", func(t *testing.T) {
		cmd := binaryCommand(nodes, "run", "--wait", "20s", "busy", "--", "true")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		cli(t, "release", "--nodes", nodes, "busy", lock.Token).expect(t, exitOK, "release")
		if err := cmd.Wait(); err != nil {
			t.Fatalf("run after the release: %v\n%s", err, stderr.String())
		}
	})
}

func TestRun_environment(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	outer, inner := filepath.Join(dir, "outer"), filepath.Join(dir, "inner")
	show := `echo "$REDLOCK_KEY $REDLOCK_TOKEN $REDLOCK_FENCE $REDLOCK_DEADLINE $REDLOCK_HELD" > `
	// The inner run finds the nodes in REDLOCK_NODES, inherited.
	script := show + outer + ` && ` + binary + ` run --ttl 2s inner-key -- sh -c '` + show + inner + `'`
	start := time.Now()
	r := runBinary(t, nodes, "run", "--ttl", "5s", "--shell", "outer-key", "--", script)
	r.expect(t, exitOK, "nested run")

	fields := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		if len(f) != 5 {
			t.Fatalf("%s: %q, want 5 fields", path, b)
		}
		return f
	}
	o, i := fields(outer), fields(inner)
	for _, tc := range []struct {
		name   string
		f      []string
		key    string
		ttl    time.Duration
		others []string
	}{
		{"outer", o, "outer-key", 5 * time.Second, i},
		{"inner", i, "inner-key", 2 * time.Second, o},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, token, fence, deadline, held := tc.f[0], tc.f[1], tc.f[2], tc.f[3], tc.f[4]
			if key != tc.key || held != "1" {
				t.Errorf("REDLOCK_KEY=%s REDLOCK_HELD=%s, want %s and 1", key, held, tc.key)
			}
			if token == tc.others[1] || len(token) < 20 {
				t.Errorf("REDLOCK_TOKEN=%q (the other run's is %q)", token, tc.others[1])
			}
			if n, err := strconv.ParseUint(fence, 10, 64); err != nil || n == 0 {
				t.Errorf("REDLOCK_FENCE=%q is not a positive integer", fence)
			}
			d, err := time.Parse(time.RFC3339Nano, deadline)
			if err != nil {
				t.Fatalf("REDLOCK_DEADLINE=%q: %v", deadline, err)
			}
			if d.Before(start) || d.After(time.Now().Add(tc.ttl)) {
				t.Errorf("REDLOCK_DEADLINE=%s outside [%s, now+%s]", d, start, tc.ttl)
			}
		})
	}
	assertReleased(t, cluster, "outer-key", "after the runs ended")
	assertReleased(t, cluster, "inner-key", "after the runs ended")
}

func TestRun_tokenHeldWhileRunning(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	file := filepath.Join(t.TempDir(), "token")
	cmd := binaryCommand(nodes, "run", "--shell", "k", "--", `echo $REDLOCK_TOKEN > `+file+`; sleep 30`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	token := strings.TrimSpace(waitForFile(t, file, 10*time.Second))
	assertHeld(t, cluster, "k", token, "while the command runs")
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "k").expect(t, exitOK, "inspect").decode(t, &state)
	if state.Holder != token {
		t.Errorf("inspect says the holder is %q, want %q", state.Holder, token)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

func TestRun_renewalKeepsCommandAlive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a command for 3.5 s")
	}
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	cmd := binaryCommand(nodes, "run", "--ttl", "1s", "--shell", "k", "--",
		`echo $REDLOCK_TOKEN > `+started+`; sleep 3.5; echo done > `+filepath.Join(dir, "done"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(waitForFile(t, started, 10*time.Second))
	// Past three TTLs, the lock is still the command's on every node.
	time.Sleep(3 * time.Second)
	assertHeld(t, cluster, "k", token, "after 3 TTLs")
	cli(t, "acquire", "--nodes", nodes, "--wait", "0", "k").expect(t, exitConflict, "acquire while the run holds the lock")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		t.Errorf("the command did not finish: %v", err)
	}
}

// validityEnds finds the deadline redlock reported when it stopped the
// command.
var validityEnds = regexp.MustCompile(`validity ends at (\S+),`)

func TestRun_majorityLostStopsCommandBeforeDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a lock to run out")
	}
	cluster, nodes := newCluster(t, 5)
	dir := t.TempDir()
	started, term := filepath.Join(dir, "started"), filepath.Join(dir, "term")
	// The trap records when SIGTERM arrived, in nanoseconds since the epoch;
	// waiting on a background sleep lets it run at once.
	script := `trap 'date +%s%N > ` + term + `; exit 0' TERM; echo $REDLOCK_DEADLINE > ` + started + `; sleep 60 & wait $!`
	cmd, stderr := startCommand(t, nodes, started, "run", "--ttl", "1s", "--kill-grace", "2s", "--shell", "k", "--", script)
	killNodes(t, cluster, 0, 1, 2)
	killed := time.Now()
	err := cmd.Wait()
	t.Logf("redlock run's stderr:\n%s", stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != exitLockLost {
		t.Fatalf("exit status %d (%v), want %d\n%s", code, err, exitLockLost, stderr.String())
	}
	b, err := os.ReadFile(term)
	if err != nil {
		t.Fatalf("the command never got SIGTERM: %v\n%s", err, stderr.String())
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	got := time.Unix(0, ns)
	m := validityEnds.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr does not report the validity deadline:\n%s", stderr.String())
	}
	deadline, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if !got.Before(deadline) {
		t.Errorf("SIGTERM reached the command at %s, not before the validity deadline %s", got.Format(timeFormat), m[1])
	}
	// Renewal cannot have moved the deadline past one TTL after the kill.
	if bound := killed.Add(time.Second); deadline.After(bound) {
		t.Errorf("reported deadline %s is after the kill + 1 TTL (%s)", m[1], formatTime(bound))
	}
	if !got.After(killed.Add(-50 * time.Millisecond)) {
		t.Errorf("SIGTERM at %s, before the nodes were killed at %s", got.Format(timeFormat), formatTime(killed))
	}
}

func TestRun_signalsForwarded(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	started, usr1, term := filepath.Join(dir, "started"), filepath.Join(dir, "usr1"), filepath.Join(dir, "term")
	script := `trap 'echo usr1 >> ` + usr1 + `' USR1; trap 'echo term > ` + term + `; exit 5' TERM; ` +
		`echo up > ` + started + `; while :; do sleep 0.05; done`
	cmd := binaryCommand(nodes, "run", "--shell", "k", "--", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitForFile(t, started, 10*time.Second)

	cmd.Process.Signal(syscall.SIGUSR1)
	waitForFile(t, usr1, 5*time.Second)
	holding := 0
	for _, n := range cluster.Nodes() {
		if keyOn(t, n, "k") != "" {
			holding++
		}
	}
	if holding < 2 {
		t.Errorf("the lock was released after SIGUSR1: %d of 3 nodes hold it", holding)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 5 {
		t.Errorf("exit status %d, want the command's 5\n%s", code, stderr.String())
	}
	if _, err := os.Stat(term); err != nil {
		t.Errorf("the command did not get SIGTERM: %v", err)
	}
	if b, _ := os.ReadFile(term); strings.Count(string(b), "term") != 1 {
		t.Errorf("the command got SIGTERM %d times", strings.Count(string(b), "term"))
	}
	assertReleased(t, cluster, "k", "after the command ended")
}

func TestRun_signalWhileWaiting(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	cli(t, "acquire", "--nodes", nodes, "--ttl", "20s", "busy").expect(t, exitOK, "acquire")
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := binaryCommand(nodes, "run", "busy", "--", "touch", marker)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	awaitCampaigning(t, cluster, "busy")
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	// It ends by SIGINT, so that a shell running it stops too (see Exit).
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("ended with %v, want killed by SIGINT\n%s", ws, stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}
}

func TestRun_recoveringNodesNeedInit(t *testing.T) {
	cluster := newFreshCluster(t, 3)
	nodes := strings.Join(cluster.URLs(), ",")
	// Brand-new nodes load the function library at their first request:
	// on a busy host that can take longer than the default node timeout.
	r := runBinary(t, nodes, "run", "--wait", "0", "--node-timeout", "1s", "k", "--", "true")
	if r.code != exitUnavailable {
		t.Fatalf("exit status %d on brand-new nodes, want %d\n%s", r.code, exitUnavailable, r.stderr)
	}
	if !strings.Contains(r.stderr, "redlock init") {
		t.Errorf("the error does not point to 'redlock init':\n%s", r.stderr)
	}
	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "init")
	runBinary(t, nodes, "run", "--wait", "0", "k", "--", "true").expect(t, exitOK, "run after init")
}

func TestAcquire_waitingOnRecoveringNodesSaysWhy(t *testing.T) {
	cluster := newFreshCluster(t, 3)
	// A node timeout that a loaded machine does not reach: with the
	// default 50 ms, a first request that dials and loads the function
	// library could time out on all three nodes, and the wait then says
	// "no answer in time".
	r := cli(t, "acquire", "--nodes", strings.Join(cluster.URLs(), ","), "--node-timeout", "1s", "--wait", "300ms", "k")
	r.expect(t, exitUnavailable, "acquire on brand-new nodes")
	// A failure is decided once a quorum is out of reach: 2 or 3 of the
	// nodes have answered by then.
	if !regexp.MustCompile(`waiting for "k" \(0s so far\): (at least )?[23] of 3 nodes recovering`).MatchString(r.stderr) || !strings.Contains(r.stderr, "redlock init") {
		t.Errorf("stderr does not explain the wait:\n%s", r.stderr)
	}
}

func TestRun_contextCancelStopsCommand(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	started, term := filepath.Join(dir, "started"), filepath.Join(dir, "term")
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"run", "--nodes", nodes, "--shell", "k", "--",
			`trap 'echo term >> ` + term + `; exit 3' TERM; echo up > ` + started + `; sleep 60 & wait $!`},
			strings.NewReader(""), &stdout, &stderr)
	}()
	waitForFile(t, started, 10*time.Second)
	cancel()
	select {
	case code := <-done:
		if code != 3 {
			t.Errorf("exit status %d, want the command's 3\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if b, _ := os.ReadFile(term); string(b) != "term\n" {
		t.Errorf("the command's SIGTERM record: %q, want one", b)
	}
	assertReleased(t, cluster, "k", "after the command ended")
}

// A node down at the start is named on stderr, even when the command
// gets its lock from the others: it is one failure nearer to none.
func TestRun_warnsOfUnreachableNode(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	if err := cluster.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "run", "--nodes", nodes, "k", "--", "true").expect(t, exitOK, "run with a node down")
	if !strings.Contains(r.stderr, "node unreachable") || !strings.Contains(r.stderr, cluster.Addrs()[2]) {
		t.Errorf("run with a node down: stderr %q, want a warning naming %s", r.stderr, cluster.Addrs()[2])
	}
	r = cli(t, "run", "--nodes", nodes, "--log-level", "error", "k", "--", "true").expect(t, exitOK, "run --log-level error")
	if strings.Contains(r.stderr, "node unreachable") {
		t.Errorf("--log-level error: stderr %q", r.stderr)
	}
}

// Each signal that ends a wait ends the script verbs' waits too, with
// 128+n, in the exit status and in the JSON: SIGQUIT prints no goroutine
// dump, SIGHUP does not kill the process before it says why.
func TestAcquire_signalWhileWaiting(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			key := "busy-" + strconv.Itoa(int(sig))
			cli(t, "acquire", "--nodes", nodes, "--ttl", "20s", key).expect(t, exitOK, "acquire")
			cmd := binaryCommand(nodes, "acquire", "--json", key)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			awaitCampaigning(t, cluster, key)
			cmd.Process.Signal(sig)
			cmd.Wait()
			want := exitSignalBase + int(sig)
			if code := cmd.ProcessState.ExitCode(); code != want {
				t.Errorf("exit status %d, want %d\n%s", code, want, stderr.String())
			}
			var out struct {
				Reason   string `json:"reason"`
				ExitCode int    `json:"exit_code"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Reason != "interrupted" || out.ExitCode != want {
				t.Errorf("stdout %q (%v), want one JSON object, reason interrupted, exit_code %d", stdout.String(), err, want)
			}
			if strings.Contains(stderr.String(), "goroutine ") {
				t.Errorf("stderr has a goroutine dump:\n%.500s", stderr.String())
			}
		})
	}
}

// run --verbose reports each renewal as it happens: a 3 s lock, renewed
// every second, under a command that runs 5.5 s, shows about five.
func TestRun_verboseReportsEachRenewal(t *testing.T) {
	_, nodes := newCluster(t, 3)
	r := runBinary(t, nodes, "run", "--verbose", "--ttl", "3s", "ren", "--", "sleep", "5.5")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, `renewed lock "ren"`); n < 4 {
		t.Errorf("%d renewals reported, want one a second:\n%s", n, r.stderr)
	}
}

// By default a command that ignores SIGTERM is killed at the lock's
// validity deadline, before anyone else can take the lock; a longer
// --kill-grace without a --lock-delay to cover it draws a warning.
func TestRun_defaultKillGraceEndsAtTheDeadline(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	script := `trap '' TERM; echo > ` + started + `; while :; do sleep 0.05; done`
	cmd, stderr := startCommand(t, nodes, started, "run", "--ttl", "1s", "--shell", "k", "--", script)
	killNodes(t, cluster, 0, 1)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitLockLost {
		t.Fatalf("exit status %d, want %d\n%s", code, exitLockLost, stderr.String())
	}
	if !strings.Contains(stderr.String(), "SIGKILL in 100ms") || strings.Contains(stderr.String(), "--kill-grace") {
		t.Errorf("stderr, want SIGKILL at the deadline, 100ms after SIGTERM, and no warning:\n%s", stderr.String())
	}
	// redlock ran throughout: the watchdog's kill at the same deadline is
	// not blamed on it.
	if strings.Contains(stderr.String(), "as redlock had not renewed it") {
		t.Errorf("stderr blames redlock for a kill at the deadline it sent itself:\n%s", stderr.String())
	}

	r := cli(t, "run", "--nodes", cluster.Node(2).URL(), "--kill-grace", "3", "--ttl", "2s", "k2", "--", "true")
	r.expect(t, exitOK, "run --kill-grace 3 --ttl 2s")
	if !strings.Contains(r.stderr, "--kill-grace 3s is longer than the 200ms") || !strings.Contains(r.stderr, "give --lock-delay 2.8s") {
		t.Errorf("run with a kill grace past the deadline, stderr:\n%s", r.stderr)
	}
	r = cli(t, "run", "--nodes", cluster.Node(2).URL(), "--kill-grace", "3", "--lock-delay", "3s", "--ttl", "2s", "k3", "--", "true")
	if r.expect(t, exitOK, "run --kill-grace 3 --lock-delay 3s"); strings.Contains(r.stderr, "--kill-grace") {
		t.Errorf("run with a lock-delay that covers the kill grace, stderr:\n%s", r.stderr)
	}
}

// --shell runs /bin/sh, which needs no PATH: a cron or systemd unit with
// an empty environment runs the command as flock's "sh -c" would.
func TestRun_shellWithoutPath(t *testing.T) {
	_, nodes := newCluster(t, 3)
	t.Setenv("PATH", "")
	r := cli(t, "run", "--nodes", nodes, "--shell", "k", "--", "exit", "3")
	if r.code != 3 {
		t.Errorf("run --shell with an empty PATH: exit %d, want the command's 3\n%s", r.code, r.stderr)
	}
}

// A failed acquisition that a node refused as recovering points to
// 'redlock init' even where other nodes failed too and recovering nodes
// alone did not withhold the quorum: brand-new nodes also answer late at
// first.
func TestFailure_aRecoveringNodePointsToInit(t *testing.T) {
	qe := &redlock.QuorumError{Op: "acquire", Key: "k", Quorum: 2, Err: redlock.ErrNotAcquired, Nodes: []redlock.NodeResult{
		{Node: "a", Outcome: redlock.OutcomeRecovering, RecoveringLeft: 30 * time.Second},
		{Node: "b", Outcome: redlock.OutcomeTimeout},
		{Node: "c", Outcome: redlock.OutcomeTimeout},
	}}
	if _, hints := failureLines(qe); !slices.Contains(hints, recoveringHint) {
		t.Errorf("hints %q, want the recovering hint", hints)
	}
	qe.Nodes[0].Outcome = redlock.OutcomeTimeout
	if _, hints := failureLines(qe); slices.Contains(hints, recoveringHint) {
		t.Errorf("hints %q without a recovering node, want no recovering hint", hints)
	}
}

// A stderr whose reader left (2>&1 | head, a logger that exited) does not
// end run: its messages fail unseen, the command runs to its end, and the
// lock is released. Before, the first message (here the renewal report)
// ended redlock by SIGPIPE, its watchdog killed the command, and the lock
// stayed held for its TTL.
func TestRun_stderrNobodyReadsKeepsTheCommand(t *testing.T) {
	_, nodes := newCluster(t, 3)
	done := filepath.Join(t.TempDir(), "done")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := binaryCommand(nodes, "run", "--verbose", "--ttl", "1.5s", "piped-stderr", "--", "sh", "-c", "sleep 1.2; touch "+done)
	cmd.Stderr = w
	if err := cmd.Run(); err != nil {
		t.Fatalf("redlock run with a stderr nobody reads: %v, want exit 0", err)
	}
	if _, err := os.Stat(done); err != nil {
		t.Errorf("the command did not run to its end: %v", err)
	}
	cli(t, "acquire", "--nodes", nodes, "-n", "piped-stderr").expect(t, exitOK, "acquire -n after the run ended")
}

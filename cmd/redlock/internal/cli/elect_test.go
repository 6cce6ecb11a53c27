package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// elect runs its command while leading, with the term in REDLOCK_FENCE and
// the value as the lock's owner, exits with its status and resigns.
func TestElect_runsCommandWhileLeading(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	env := filepath.Join(t.TempDir(), "env")
	r := runBinary(t, nodes, "elect", "--shell", "svc", "host-a:8080", "--",
		`echo $REDLOCK_KEY $REDLOCK_FENCE > `+env+`; exit 3`)
	if r.code != 3 {
		t.Fatalf("exit status %d, want 3\n%s", r.code, r.stderr)
	}
	fields := strings.Fields(waitForFile(t, env, time.Second))
	if len(fields) != 2 || fields[0] != "svc" {
		t.Fatalf("REDLOCK_KEY REDLOCK_FENCE = %q", fields)
	}
	if term, err := strconv.ParseUint(fields[1], 10, 64); err != nil || term == 0 {
		t.Errorf("REDLOCK_FENCE %q is not a term", fields[1])
	}
	assertReleased(t, cluster, "svc", "after the leader's command ended")
}

// The leader's lock names its value as its owner, whether it campaigned
// or made one attempt (-n).
func TestElect_valueIsTheLeadersOwner(t *testing.T) {
	_, nodes := newCluster(t, 3)
	for i, flags := range [][]string{nil, {"-n"}} {
		dir := t.TempDir()
		led, stop := filepath.Join(dir, "led"), filepath.Join(dir, "stop")
		value := fmt.Sprintf("host-%d:8080", i)
		args := append(append([]string{"elect", "--shell"}, flags...), "svc", value, "--",
			`echo led > `+led+`; while [ ! -f `+stop+` ]; do sleep 0.02; done`)
		leader := binaryCommand(nodes, args...)
		var stderr bytes.Buffer
		leader.Stderr = &stderr
		if err := leader.Start(); err != nil {
			t.Fatal(err)
		}
		defer leader.Process.Kill()
		waitForFile(t, led, 10*time.Second)
		var state inspectJSON
		cli(t, "inspect", "--nodes", nodes, "--json", "svc").expect(t, exitOK, "inspect --json").decode(t, &state)
		if state.Owner != value {
			t.Errorf("elect %q: the leader's owner is %q, want %q", flags, state.Owner, value)
		}
		if err := os.WriteFile(stop, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := leader.Wait(); err != nil {
			t.Fatalf("elect %q: %v\n%s", flags, err, stderr.String())
		}
	}
}

// A second candidate waits while the first leads, and is elected as soon
// as the first's command ends.
func TestElect_nextCandidateLeadsOnceTheFirstEnds(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	led, stop, second := filepath.Join(dir, "led"), filepath.Join(dir, "stop"), filepath.Join(dir, "second")
	first := binaryCommand(nodes, "elect", "--shell", "svc", "a", "--",
		`echo $REDLOCK_FENCE > `+led+`; while [ ! -f `+stop+` ]; do sleep 0.02; done`)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	firstTerm := strings.TrimSpace(waitForFile(t, led, 10*time.Second))
	next := binaryCommand(nodes, "elect", "--shell", "svc", "b", "--", `echo $REDLOCK_FENCE > `+second)
	var stderr bytes.Buffer
	next.Stderr = &stderr
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	defer next.Process.Kill()
	awaitCampaigning(t, cluster, "svc")
	if _, err := os.Stat(second); err == nil {
		t.Fatal("the second candidate ran while the first led")
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first leader: %v", err)
	}
	if err := next.Wait(); err != nil {
		t.Fatalf("second leader: %v\n%s", err, stderr.String())
	}
	a, _ := strconv.ParseUint(firstTerm, 10, 64)
	b, _ := strconv.ParseUint(strings.TrimSpace(waitForFile(t, second, time.Second)), 10, 64)
	if b <= a {
		t.Errorf("second term %d not above the first's %d", b, a)
	}
}

// awaitCampaigning polls until a candidate waits for the lock name on a
// node of cluster: the node's queue of waiting clients for it is not empty.
func awaitCampaigning(t *testing.T, cluster *redlocktest.Cluster, name string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, n := range cluster.Nodes() {
			if v, err := n.Do(bg, "ZCARD", "redlock:queue:"+name); err == nil && v != "0" {
				return
			}
		}
	}
	t.Fatalf("no candidate campaigns for %q", name)
}

// elect --listen prints the vacancy, each leader with its value and term,
// and the vacancy after it, until interrupted; --json as objects.
func TestElect_listenPrintsEachLeader(t *testing.T) {
	_, nodes := newCluster(t, 3)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			name := "listened-" + format
			args := []string{"elect", "--listen", name}
			if format == "json" {
				args = []string{"elect", "--listen", "--json", name}
			}
			cmd := binaryCommand(nodes, args...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := bufio.NewScanner(out)
			next := func() leaderJSON {
				t.Helper()
				if !lines.Scan() {
					t.Fatalf("elect --listen ended: %v\n%s", lines.Err(), stderr.String())
				}
				return parseLeaderLine(t, format, lines.Text())
			}
			if l := next(); !l.Vacant {
				t.Fatalf("first line %+v, want vacant", l)
			}
			var lock acquiredJSON
			cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "20s", "--owner", "host-a:8080", name).
				expect(t, exitOK, "acquire").decode(t, &lock)
			if l := next(); l.Vacant || l.Value != "host-a:8080" || l.Term != lock.Fence {
				t.Fatalf("line %+v, want host-a:8080, term %d", l, lock.Fence)
			}
			cli(t, "release", "--nodes", nodes, name, lock.Token).expect(t, exitOK, "release")
			if l := next(); !l.Vacant {
				t.Fatalf("line %+v after the release, want vacant", l)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("elect --listen ended by SIGTERM: %v\n%s", err, stderr.String())
			}
		})
	}
}

// elect --listen --json prints every field on every line: a vacancy has
// "value", "since" and "token" "" and "term" 0, as check and inspect print
// a holder that is none, rather than leaving them out.
func TestElect_listenJSONPrintsEveryFieldOfAVacancy(t *testing.T) {
	_, nodes := newCluster(t, 3)
	ctx, cancel := context.WithCancel(bg)
	out, errs := newLockedBuffer(), newLockedBuffer()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"elect", "--listen", "--json", "--nodes", nodes, "seat"}, strings.NewReader(""), out, errs)
	}()
	defer func() { cancel(); <-done }()
	line := func(i int) map[string]any {
		t.Helper()
		eventually(t, 10*time.Second, fmt.Sprintf("line %d of elect --listen --json", i+1), func() bool {
			return strings.Count(out.String(), "\n") > i
		})
		var l map[string]any
		if err := json.Unmarshal([]byte(strings.Split(out.String(), "\n")[i]), &l); err != nil {
			t.Fatalf("line %d: %v\n%s", i+1, err, out.String())
		}
		return l
	}
	vacancy := map[string]any{"name": "seat", "vacant": true, "value": "", "term": 0.0, "since": "", "token": ""}
	if l := line(0); !reflect.DeepEqual(l, vacancy) {
		t.Errorf("first line %v, want %v", l, vacancy)
	}
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--owner", "host-a:8080", "seat").expect(t, exitOK, "acquire").decode(t, &lock)
	l := line(1)
	if l["vacant"] != false || l["value"] != "host-a:8080" || l["term"] != float64(lock.Fence) || l["token"] != lock.Token || l["since"] == "" {
		t.Errorf("leader's line %v, want host-a:8080, term %d, token %s and since", l, lock.Fence, lock.Token)
	}
	cli(t, "release", "--nodes", nodes, "seat", lock.Token).expect(t, exitOK, "release")
	if l := line(2); !reflect.DeepEqual(l, vacancy) {
		t.Errorf("line after the release %v, want %v", l, vacancy)
	}
}

// parseLeaderLine reads one line of elect --listen in format.
func parseLeaderLine(t *testing.T, format, line string) leaderJSON {
	t.Helper()
	var l leaderJSON
	if format == "json" {
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		return l
	}
	f := strings.Fields(line)
	switch {
	case len(f) == 1 && f[0] == "vacant":
		l.Vacant = true
	case len(f) == 6 && f[0] == "leader" && f[2] == "term" && f[4] == "since":
		l.Value = f[1]
		l.Term, _ = strconv.ParseUint(f[3], 10, 64)
	default:
		t.Fatalf("line %q is neither a leader nor a vacancy", line)
	}
	return l
}

// Bad arguments are usage errors.
func TestElect_badArguments(t *testing.T) {
	_, nodes := newCluster(t, 1)
	for _, args := range [][]string{
		{"svc"},
		{"svc", "--", "true"},
		{"--json", "svc", "a", "--", "true"},
		{"--listen", "svc", "a"},
		{"--listen"},
		{"svc", "has space", "--", "true"},
		{"svc", "a", "extra", "--", "true"},
		{"svc", "a", "--"}, // an empty command, not a hold without one
	} {
		r := cli(t, append([]string{"elect", "--nodes", nodes}, args...)...)
		if r.code != exitUsage {
			t.Errorf("elect %q: exit status %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}

// A leader that loses a majority of the nodes has its command stopped, as
// run's is, and elect exits with 76, saying so under its own name.
func TestElect_lostLeadStopsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a lead to run out")
	}
	cluster, nodes := newCluster(t, 5)
	dir := t.TempDir()
	started, term := filepath.Join(dir, "started"), filepath.Join(dir, "term")
	script := `trap 'echo > ` + term + `; exit 0' TERM; echo > ` + started + `; sleep 60 & wait $!`
	cmd, stderr := startCommand(t, nodes, started, "elect", "--ttl", "1s", "--kill-grace", "2s", "--shell", "svc", "a", "--", script)
	killNodes(t, cluster, 0, 1, 2)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitLockLost {
		t.Fatalf("exit status %d (%v), want %d\n%s", code, err, exitLockLost, stderr.String())
	}
	if _, err := os.Stat(term); err != nil {
		t.Fatalf("the command never got SIGTERM: %v\n%s", err, stderr.String())
	}
	if out := stderr.String(); !strings.Contains(out, "redlock elect: ") || !strings.Contains(out, "stopping the command") || strings.Contains(out, "redlock run") {
		t.Errorf("elect's messages should name elect:\n%s", out)
	}
}

// A run inside elect's command that waits for the election's own key is
// warned that the enclosing elect holds it, in words that fit elect.
func TestElect_nestedRunIsWarned(t *testing.T) {
	_, nodes := newCluster(t, 3)
	r := runBinary(t, nodes, "elect", "--shell", "svc", "a", "--", binary+" run --wait 200ms svc -- true")
	if r.code == exitOK {
		t.Fatalf("the nested run took the leader's key\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, `"svc" is already held by the enclosing 'redlock run' or 'redlock elect'`) {
		t.Errorf("no warning naming elect:\n%s", r.stderr)
	}
}

// elect --listen takes no lock, so the default --ttl does not have to be
// within a shorter --recovery-delay; a candidate's does, and the refusal
// says which --ttl to give.
func TestElect_shortRecoveryDelay(t *testing.T) {
	_, nodes := newCluster(t, 3)
	cmd := binaryCommand(nodes, "elect", "--listen", "--recovery-delay", "3s", "svc")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	first := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		lines.Scan()
		first <- lines.Text()
	}()
	select {
	case line := <-first:
		if line != "vacant" {
			t.Fatalf("elect --listen --recovery-delay 3s: first line %q, want vacant\n%s", line, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("elect --listen --recovery-delay 3s printed nothing\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("elect --listen --recovery-delay 3s: %v\n%s", err, stderr.String())
	}

	r := cli(t, "elect", "--nodes", nodes, "--recovery-delay", "3s", "svc", "a", "--", "true").expect(t, exitUsage, "elect --recovery-delay 3s")
	if !strings.Contains(r.stderr, "--ttl 10s (the default) is above --recovery-delay 3s") || !strings.Contains(r.stderr, "give --ttl 3s or less") {
		t.Errorf("elect --recovery-delay 3s: stderr:\n%s", r.stderr)
	}
	runBinary(t, nodes, "elect", "--ttl", "3s", "--recovery-delay", "3s", "svc", "a", "--", "true").expect(t, exitOK, "elect --ttl 3s --recovery-delay 3s")
}

// Without a command, elect holds the lead until interrupted, as etcdctl
// elect does: it says it leads on stdout, SIGTERM resigns the lead and
// ends it with 0 (the next candidate leads at once), and SIGINT ends it
// by SIGINT.
func TestElect_withoutCommandHoldsTheLeadUntilInterrupted(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		leader, _, stderr := startHoldingLead(t, nodes, "svc", "host-a")
		if err := leader.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err := waitTimeout(leader, 10*time.Second)
		switch status := leader.ProcessState.Sys().(syscall.WaitStatus); {
		case sig == syscall.SIGTERM && (err != nil || status.ExitStatus() != 0):
			t.Errorf("after SIGTERM: %v, want exit 0\n%s", err, stderr)
		case sig == syscall.SIGINT && (!status.Signaled() || status.Signal() != syscall.SIGINT):
			t.Errorf("after SIGINT: %v, want the end by SIGINT\n%s", err, stderr)
		}
		// Resigned: the next candidate leads at once, not after a TTL.
		runBinary(t, nodes, "elect", "--wait", "1s", "svc", "host-b", "--", "true").
			expect(t, exitOK, "the next candidate after "+sig.String())
		assertReleased(t, cluster, "svc", "after the next leader's command ended")
	}
}

// Without a command, a lost lead is said as such: the command that held
// it is redlock's own, so stderr says nothing of a command, its process
// group or its signals, and elect exits with 76. Two of three nodes
// paused keep the lead from being renewed.
func TestElect_withoutCommandSaysTheLeadWasLost(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	leader, stdout, stderr := startHoldingLead(t, nodes, "--ttl", "1s", "svc", "host-a")
	for _, i := range []int{0, 1} {
		if err := cluster.Node(i).Pause(); err != nil {
			t.Fatal(err)
		}
		defer cluster.Node(i).Resume()
	}
	waitTimeout(leader, 20*time.Second)
	if code := leader.ProcessState.ExitCode(); code != exitLockLost {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitLockLost, stdout, stderr)
	}
	assertLeadLostSaid(t, stderr.String(), `redlock elect: lost the lead of "svc": lock "svc" could not be renewed`)
}

// startHoldingLead starts 'redlock elect' with args and no command, killed
// at the end of the test, and waits until it says it leads.
func startHoldingLead(t *testing.T, nodes string, args ...string) (*exec.Cmd, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	leader := binaryCommand(nodes, append([]string{"elect"}, args...)...)
	stdout, stderr := newLockedBuffer(), newLockedBuffer()
	leader.Stdout, leader.Stderr = stdout, stderr
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { leader.Process.Kill() })
	waitForText(t, stdout, "leading svc, term ", 10*time.Second)
	return leader, stdout, stderr
}

// assertLeadLostSaid fails the test unless stderr, of an elect given no
// command, has want and says nothing of a command or its process group.
func assertLeadLostSaid(t *testing.T, stderr, want string) {
	t.Helper()
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
	var spoken []string
	for _, bad := range []string{"command", "process group", "SIGTERM", "SIGKILL", "watchdog"} {
		if strings.Contains(stderr, bad) {
			spoken = append(spoken, bad)
		}
	}
	if len(spoken) > 0 {
		t.Errorf("stderr speaks of %q, to a user who gave no command:\n%s", spoken, stderr)
	}
}

// elect --listen refuses the flags that only a candidate has a use for,
// naming the flag as given, rather than ignore them; a --ttl longer than
// --recovery-delay only paces its reads, and is taken.
func TestElect_listenRefusesCandidateFlags(t *testing.T) {
	_, nodes := newCluster(t, 1)
	for _, flags := range [][]string{
		{"-n"},
		{"--wait", "5s"},
		{"-w", "5"},
		{"--conflict-exit-code", "0"},
		{"-E", "0"},
		{"--retry-delay", "50ms"},
		{"--lock-delay", "5s"},
		{"--kill-grace", "2s"},
		{"--shell"},
		{"--verbose"},
	} {
		// Before, the listener ignored the flag and listened until ctx ended.
		ctx, cancel := context.WithTimeout(bg, 2*time.Second)
		var stdout, stderr bytes.Buffer
		args := append(append([]string{"elect", "--nodes", nodes, "--listen"}, flags...), "svc")
		code := Run(ctx, args, strings.NewReader(""), &stdout, &stderr)
		cancel()
		if want := flags[0] + " goes with a candidate, not --listen"; code != exitUsage || !strings.Contains(stderr.String(), want) {
			t.Errorf("elect --listen %s: exit status %d, want %d saying %q\nstdout:\n%s\nstderr:\n%s",
				strings.Join(flags, " "), code, exitUsage, want, &stdout, &stderr)
		}
	}

	ctx, cancel := context.WithCancel(bg)
	out, errs := newLockedBuffer(), newLockedBuffer()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"elect", "--nodes", nodes, "--listen", "--ttl", "1m", "--node-timeout", "100ms", "svc"},
			strings.NewReader(""), out, errs)
	}()
	eventually(t, 10*time.Second, "elect --listen --ttl 1m to print the vacancy", func() bool { return out.String() == "vacant\n" })
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("elect --listen --ttl 1m: exit status %d, want %d\n%s", code, exitOK, errs)
	}
}

// A leader of another library (SET NX PX, a token that names no owner)
// keeps the fields of elect --listen's line in place: VALUE "-", TERM 0,
// TIME "unknown".
func TestElect_listenShowsAnotherLibrarysLeader(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "SET", "seat", "their-token", "NX", "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(bg)
	out, errs := newLockedBuffer(), newLockedBuffer()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"elect", "--listen", "--nodes", nodes, "seat"}, strings.NewReader(""), out, errs)
	}()
	defer func() { cancel(); <-done }()
	eventually(t, 10*time.Second, "the first line of elect --listen", func() bool {
		return strings.Contains(out.String(), "\n")
	})
	if line, want := strings.Split(out.String(), "\n")[0], "leader - term 0 since unknown"; line != want {
		t.Errorf("elect --listen under another library's lock: %q, want %q\n%s", line, want, errs)
	}
}

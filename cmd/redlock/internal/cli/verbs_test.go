package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

func TestAcquireExtendRelease(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	job := cliJob{cluster: cluster, nodes: nodes}
	start := time.Now()
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "2s", "job").expect(t, exitOK, "acquire").decode(t, &job.lock)
	if lock := job.lock; lock.Key != "job" || lock.Token == "" || lock.Fence == 0 || lock.TTLMs != 2000 {
		t.Fatalf("acquire printed %+v", lock)
	}
	// The deadline is counted from the attempt, which starts after the
	// process does: between the call's start and its return plus the TTL.
	deadline, err := time.Parse(time.RFC3339Nano, job.lock.Deadline)
	if err != nil || deadline.Before(start) || deadline.After(time.Now().Add(2*time.Second)) {
		t.Errorf("deadline %q (%v) outside [start, return+TTL]", job.lock.Deadline, err)
	}

	t.Run("held", job.secondAcquireConflicts)
	t.Run("inspect", job.inspectShowsHolder)
	t.Run("extend", job.extendMovesExpiry)
	t.Run("wrong token", job.wrongTokenRefused)
	t.Run("release", job.releaseFreesLock)
}

// cliJob is the lock "job" that TestAcquireExtendRelease took with
// 'redlock acquire', and the cluster it is on.
type cliJob struct {
	cluster *redlocktest.Cluster
	nodes   string // the --nodes value
	lock    acquiredJSON
}

// secondAcquireConflicts checks that another 'redlock acquire' of the held
// lock fails with a conflict.
func (j cliJob) secondAcquireConflicts(t *testing.T) {
	r := cli(t, "acquire", "--nodes", j.nodes, "--json", "--wait", "0", "job").expect(t, exitConflict, "second acquire")
	var f failureJSON
	r.decode(t, &f)
	if f.Reason != failConflict || len(f.Nodes) != 3 {
		t.Errorf("failure %+v, want reason conflict and 3 nodes", f)
	}
	if !strings.Contains(r.stderr, "held by another holder") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// inspectShowsHolder checks that 'redlock inspect' shows the lock held on
// a quorum of the nodes, in JSON and in text: acquire returned once a
// quorum granted it.
func (j cliJob) inspectShowsHolder(t *testing.T) {
	var state inspectJSON
	cli(t, "inspect", "--nodes", j.nodes, "--json", "job").expect(t, exitOK, "inspect").decode(t, &state)
	if state.Holder != j.lock.Token || state.Quorum != 2 || len(state.Nodes) != 3 {
		t.Fatalf("inspect: %+v", state)
	}
	wantNodesHold(t, state, j.lock)
	text := cli(t, "inspect", "--nodes", j.nodes, "job").expect(t, exitOK, "inspect").stdout
	if !regexp.MustCompile(`held by ` + regexp.QuoteMeta(j.lock.Token) + ` on [23] of 3 nodes`).MatchString(text) {
		t.Errorf("inspect:\n%s", text)
	}
}

// wantNodesHold fails the test unless a quorum of the nodes in state hold
// lock, each with a counter no greater than its fencing token, the others
// nothing, and a quorum has that token as its counter.
func wantNodesHold(t *testing.T, state inspectJSON, lock acquiredJSON) {
	t.Helper()
	holding, atFence := 0, 0
	for _, n := range state.Nodes {
		switch {
		case n.Recovering || n.Error != "":
			t.Errorf("node %+v", n)
		case n.Holder == lock.Token:
			holding++
			if n.TTLMs <= 0 || n.TTLMs > 2000 || n.Fence == 0 || n.Fence > lock.Fence {
				t.Errorf("node %+v", n)
			}
		case n.Holder != "" || len(n.Readers) > 0:
			t.Errorf("node %+v: held by another", n)
		}
		if n.Fence == lock.Fence {
			atFence++
		}
	}
	if holding < state.Quorum {
		t.Errorf("%d nodes hold the lock, want a quorum", holding)
	}
	if atFence < state.Quorum {
		t.Errorf("%d nodes have the lock's fence %d as their counter, want a quorum", atFence, lock.Fence)
	}
}

// extendMovesExpiry checks that 'redlock extend' to 8s moves the key's expiry
// on a quorum of the nodes: extend returned once a quorum answered.
func (j cliJob) extendMovesExpiry(t *testing.T) {
	var ext extendedJSON
	cli(t, "extend", "--nodes", j.nodes, "--json", "--ttl", "8s", "job", j.lock.Token).expect(t, exitOK, "extend").decode(t, &ext)
	if ext.ValidityMs < 7000 || ext.ValidityMs > 8000 {
		t.Errorf("extend: %+v", ext)
	}
	var pttls []string
	extended := 0
	for _, n := range j.cluster.Nodes() {
		pttl, err := n.Do(context.Background(), "PTTL", "job")
		if err != nil {
			t.Fatalf("PTTL on node %d: %v", n.Index(), err)
		}
		if ms, _ := strconv.Atoi(pttl); ms >= 7000 {
			extended++
		}
		pttls = append(pttls, pttl)
	}
	if extended < 2 {
		t.Errorf("PTTL %v on the nodes after extending to 8s, want at least 7000 on 2 of 3", pttls)
	}
	text := cli(t, "extend", "--nodes", j.nodes, "job", j.lock.Token).expect(t, exitOK, "extend").stdout
	if !strings.HasPrefix(text, "extended job until ") {
		t.Errorf("extend printed %q", text)
	}
}

// wrongTokenRefused checks that 'redlock extend' and 'redlock release' with
// another token fail and leave the lock held.
func (j cliJob) wrongTokenRefused(t *testing.T) {
	cli(t, "extend", "--nodes", j.nodes, "job", "someone-else").expect(t, exitLockLost, "extend with a wrong token")
	cli(t, "release", "--nodes", j.nodes, "job", "someone-else").expect(t, exitLockLost, "release with a wrong token")
	assertHeld(t, j.cluster, "job", j.lock.Token, "after a wrong token's extend and release")
}

// releaseFreesLock checks that 'redlock release' frees the lock, and that
// the token can then neither release nor extend it.
func (j cliJob) releaseFreesLock(t *testing.T) {
	r := cli(t, "release", "--nodes", j.nodes, "--json", "job", j.lock.Token).expect(t, exitOK, "release")
	var rel releasedJSON
	r.decode(t, &rel)
	if !rel.Released {
		t.Errorf("release: %+v", rel)
	}
	assertReleased(t, j.cluster, "job", "after release")
	cli(t, "release", "--nodes", j.nodes, "job", j.lock.Token).expect(t, exitLockLost, "second release")
	cli(t, "extend", "--nodes", j.nodes, "job", j.lock.Token).expect(t, exitLockLost, "extend after release")
	text := cli(t, "inspect", "--nodes", j.nodes, "job").expect(t, exitOK, "inspect").stdout
	if !strings.Contains(text, "not held") {
		t.Errorf("inspect after release:\n%s", text)
	}
}

func TestVerbs_majorityDown(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "5s", "k").expect(t, exitOK, "acquire").decode(t, &lock)
	for _, i := range []int{0, 1} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	r := cli(t, "acquire", "--nodes", nodes, "--wait", "0", "other")
	r.expect(t, exitUnavailable, "acquire with 2 of 3 nodes down")
	if !strings.Contains(r.stderr, "connection refused") || !strings.Contains(r.stderr, cluster.Node(0).Addr()) {
		t.Errorf("stderr does not show each node's outcome:\n%s", r.stderr)
	}
	cli(t, "extend", "--nodes", nodes, "k", lock.Token).expect(t, exitUnavailable, "extend with 2 of 3 nodes down")
	cli(t, "inspect", "--nodes", nodes, "k").expect(t, exitUnavailable, "inspect with 2 of 3 nodes down")
}

func TestDoctor(t *testing.T) {
	t.Run("healthy", doctorHealthy)
	t.Run("eviction", doctorEviction)
	t.Run("duplicate", doctorDuplicate)
	t.Run("majority unreachable", doctorMajorityUnreachable)
}

// doctorHealthy checks that 'redlock doctor' passes a new cluster after
// 'redlock init', in text and in JSON.
func doctorHealthy(t *testing.T) {
	c := newFreshCluster(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "init")
	r := cli(t, "doctor", "--nodes", nodes).expect(t, exitOK, "doctor")
	wantDoctorSays(t, r.stdout, "NODE", c.Node(0).Addr(), "7.", "master", "noeviction", "OK: no finding makes locks unsafe")
	var report doctorJSON
	cli(t, "doctor", "--nodes", nodes, "--json").expect(t, exitOK, "doctor --json").decode(t, &report)
	if report.Unsafe || report.Reachable != 3 || len(report.Nodes) != 3 {
		t.Errorf("doctor --json: %+v", report)
	}
}

// doctorEviction checks that 'redlock doctor' fails nodes that may evict
// keys, and says how to fix them.
func doctorEviction(t *testing.T) {
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Config: []string{"maxmemory-policy allkeys-lru"}})
	r := cli(t, "doctor", "--nodes", strings.Join(c.URLs(), ",")).expect(t, exitFailure, "doctor")
	wantDoctorSays(t, r.stdout, "critical", "eviction", "allkeys-lru", "remedy: set maxmemory-policy noeviction", "UNSAFE")
}

// doctorDuplicate checks that 'redlock doctor' fails a node given twice.
func doctorDuplicate(t *testing.T) {
	c := newFreshCluster(t, 3)
	urls := c.URLs()
	nodes := strings.Join(append(urls, urls[0]), ",")
	r := cli(t, "doctor", "--nodes", nodes, "--json").expect(t, exitFailure, "doctor")
	var report doctorJSON
	r.decode(t, &report)
	found := false
	for _, f := range report.Findings {
		found = found || (f.Check == "duplicate" && f.Severity == "critical")
	}
	if !found || !report.Unsafe {
		t.Errorf("no critical duplicate finding: %+v", report)
	}
}

// doctorMajorityUnreachable checks that 'redlock doctor' fails a cluster of
// which only a minority answers.
func doctorMajorityUnreachable(t *testing.T) {
	c := newFreshCluster(t, 3)
	for _, i := range []int{0, 1} {
		if err := c.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	r := cli(t, "doctor", "--nodes", strings.Join(c.URLs(), ",")).expect(t, exitFailure, "doctor")
	if !strings.Contains(r.stdout, "unreachable") || !strings.Contains(r.stdout, "1 of 3 nodes reachable") {
		t.Errorf("doctor output:\n%s", r.stdout)
	}
}

// wantDoctorSays fails the test unless the output of 'redlock doctor'
// contains each of wants.
func wantDoctorSays(t *testing.T, output string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(output, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, output)
		}
	}
}

func TestInit_refusesARestartedNode(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	// A node that restarts without persistence comes back empty: it forgot
	// the locks it granted, and must sit out the recovery delay.
	if err := cluster.Node(2).Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	// An acquisition reaches it and starts its quarantine.
	cli(t, "acquire", "--nodes", nodes, "--wait", "0", "--ttl", "1s", "k").expect(t, exitOK, "acquire")
	r := cli(t, "init", "--nodes", nodes).expect(t, exitFailure, "init after a restart")
	if !strings.Contains(r.stderr, "not a brand-new deployment") || !strings.Contains(r.stderr, cluster.Node(2).Addr()) {
		t.Errorf("init's refusal:\n%s", r.stderr)
	}
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "k").expect(t, exitOK, "inspect").decode(t, &state)
	if !state.Nodes[2].Recovering || state.Nodes[0].Recovering {
		t.Errorf("inspect: %+v", state.Nodes)
	}
	cli(t, "init", "--nodes", nodes, "--force").expect(t, exitOK, "init --force")
	cli(t, "inspect", "--nodes", nodes, "--json", "k").expect(t, exitOK, "inspect").decode(t, &state)
	if state.Nodes[2].Recovering {
		t.Errorf("node 2 still recovering after init --force: %+v", state.Nodes[2])
	}
}

// Nodes that refuse for a reason no retry fixes (the library's fencing
// counter is a list on two of three nodes) end even a waiting acquire at
// once, with the configuration exit code and the cause.
func TestVerbs_permanentRefusalIsAConfigError(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, i := range []int{0, 1} {
		if _, err := cluster.Node(i).Do(context.Background(), "RPUSH", "redlock:fence:job", "x"); err != nil {
			t.Fatal(err)
		}
	}
	r := cli(t, "acquire", "--nodes", nodes, "--wait", "1m", "job")
	r.expect(t, exitConfig, "acquire with the fencing counter a list on two of three nodes")
	if !strings.Contains(r.stderr, "WRONGTYPE") || !strings.Contains(r.stderr, "no retry fixes") {
		t.Errorf("stderr does not name the cause:\n%s", r.stderr)
	}
}

// A lock name whose key holds another program's data (a hash without an
// expiry) ends a writer's and a reader's acquire at once, with the
// configuration exit code and no line saying they wait; inspect says what
// the key holds.
func TestVerbs_keyHoldingOtherData(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for i := range 3 {
		if _, err := cluster.Node(i).Do(context.Background(), "HSET", "profile", "name", "ada"); err != nil {
			t.Fatal(err)
		}
	}
	for _, shared := range []bool{false, true} {
		args := []string{"acquire", "--nodes", nodes, "--wait", "1m"}
		if shared {
			args = append(args, "--shared")
		}
		r := cli(t, append(args, "profile")...)
		r.expect(t, exitConfig, fmt.Sprintf("acquire of a hash's key (shared %v)", shared))
		if !strings.Contains(r.stderr, "another type than a lock's") || strings.Contains(r.stderr, "waiting for") {
			t.Errorf("acquire of a hash's key (shared %v), stderr:\n%s", shared, r.stderr)
		}
	}
	text := cli(t, "inspect", "--nodes", nodes, "profile").expect(t, exitOK, "inspect").stdout
	if !strings.Contains(text, "(hash, no lock)") || !strings.Contains(text, "holds data of another type than a lock's on 3 of 3 nodes") {
		t.Errorf("inspect of a hash's key:\n%s", text)
	}
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "profile").expect(t, exitOK, "inspect --json").decode(t, &state)
	if len(state.Nodes) != 3 || state.Nodes[0].Data != "hash" {
		t.Errorf("inspect --json of a hash's key: %+v", state.Nodes)
	}
}

// One server listed under two names is refused by every verb that locks,
// init included, with the configuration exit code.
func TestVerbs_oneServerUnderTwoNames(t *testing.T) {
	cluster, _ := newCluster(t, 2)
	port := strconv.Itoa(cluster.Node(0).Port())
	nodes := "redis://localhost:" + port + ",redis://127.0.0.1:" + port + "," + cluster.Node(1).URL()
	for _, verb := range []string{"init", "acquire"} {
		args := []string{verb, "--nodes", nodes}
		if verb == "acquire" {
			args = append(args, "job")
		}
		r := cli(t, args...)
		r.expect(t, exitConfig, verb+" with one server listed twice")
		if !strings.Contains(r.stderr, "one server") {
			t.Errorf("%s: stderr does not say why:\n%s", verb, r.stderr)
		}
	}
	// Two servers listed twice each: each finding is a line of redlock's.
	port1 := strconv.Itoa(cluster.Node(1).Port())
	nodes = nodes + ",redis://localhost:" + port1
	r := cli(t, "acquire", "--nodes", nodes, "job").expect(t, exitConfig, "acquire with two servers listed twice")
	if n := strings.Count(r.stderr, "reach one server"); n != 2 {
		t.Errorf("%d findings of one server under two names, want 2:\n%s", n, r.stderr)
	}
	for line := range strings.Lines(r.stderr) {
		if !strings.HasPrefix(line, "redlock acquire: ") {
			t.Errorf("a line of stderr that is not redlock's: %q", line)
		}
	}
}

// A Redis Cluster given as one node URL (?cluster=1): init marks every slot
// ready, and the verbs lock on it; run holds the lock around a command.
func TestVerbs_redisClusterNode(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	nodes := cluster.URLs()[0] + "?cluster=1&addr=" + cluster.Addrs()[1]
	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "init on a Redis Cluster")
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "job").expect(t, exitOK, "acquire on a Redis Cluster").decode(t, &lock)
	cli(t, "acquire", "--nodes", nodes, "--wait", "0", "job").expect(t, exitConflict, "a second acquire of a held lock")
	cli(t, "release", "--nodes", nodes, "job", lock.Token).expect(t, exitOK, "release on a Redis Cluster")
	cli(t, "run", "--nodes", nodes, "job", "--", "true").expect(t, exitOK, "run on a Redis Cluster")
}

// acquire that cannot write its tokens to stdout (a pipe whose reader
// left, a full disk) releases the locks it took and exits 74: nobody
// received their tokens, and the keys would stay locked for their TTL.
func TestAcquire_tokensNobodyReceivedAreReleased(t *testing.T) {
	_, nodes := newCluster(t, 3)
	for _, tc := range []struct {
		name string
		args []string
		out  func(t *testing.T) *os.File
	}{
		{"a pipe nobody reads", []string{"acquire", "--print-token", "piped"}, func(t *testing.T) *os.File {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			t.Cleanup(func() { w.Close() })
			return w
		}},
		{"a full disk", []string{"acquire", "--json", "full-a", "full-b"}, func(t *testing.T) *os.File {
			f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := binaryCommand(nodes, tc.args...)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = tc.out(t), &stderr
			err := cmd.Run()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitIOError {
				t.Fatalf("redlock %s: %v, want exit status %d\nstderr:\n%s", strings.Join(tc.args, " "), err, exitIOError, stderr.String())
			}
			if !strings.Contains(stderr.String(), "could not write the tokens to stdout") || !strings.Contains(stderr.String(), "released") {
				t.Errorf("stderr does not say what became of the locks:\n%s", stderr.String())
			}
			for _, key := range tc.args[2:] {
				cli(t, "acquire", "--nodes", nodes, "-n", key).expect(t, exitOK, "acquire -n "+key+" after the tokens were lost")
			}
		})
	}
}

// inspect of a node that restarted says that its recovery delay starts at
// the next acquisition, as doctor does, and counts down once one reached
// it: before, it showed a countdown that did not run.
func TestInspect_restartedNodeSitsOutFromTheNextAcquisition(t *testing.T) {
	// Its data, the restart marker included, survives the restart.
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1, AppendFsyncAlways: true, Unmarked: true})
	nodes := cluster.URLs()[0]
	cli(t, "init", "--nodes", nodes).expect(t, exitOK, "redlock init")
	if err := cluster.Node(0).Restart(bg); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "inspect", "--nodes", nodes, "job").expect(t, exitOK, "inspect after a restart")
	if !strings.Contains(r.stdout, "restarted or failed over, sits out 30s from the next acquisition") {
		t.Errorf("inspect after a restart:\n%s", r.stdout)
	}
	cli(t, "acquire", "--nodes", nodes, "-n", "job").expect(t, exitUnavailable, "acquire on a recovering node")
	r = cli(t, "inspect", "--nodes", nodes, "job").expect(t, exitOK, "inspect once an acquisition reached it")
	if !strings.Contains(r.stdout, "recovering: votes again in") {
		t.Errorf("inspect once an acquisition reached the restarted node:\n%s", r.stdout)
	}
}

// acquire with its standard output on /dev/null, or closed (which a Go
// program finds on /dev/null), warns that nobody receives the token and
// that the lock stays held until its TTL: before, it said nothing.
func TestAcquire_tokensToDevNullAreWarnedOf(t *testing.T) {
	_, nodes := newCluster(t, 3)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	cmd := binaryCommand(nodes, "acquire", "--ttl", "30s", "discarded")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = null, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("redlock acquire >/dev/null: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "nobody receives the tokens") || !strings.Contains(stderr.String(), "stays held until its TTL") {
		t.Errorf("stderr does not warn of the discarded token:\n%s", stderr.String())
	}
}

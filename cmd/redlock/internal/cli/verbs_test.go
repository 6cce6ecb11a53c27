package cli

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

func TestAcquireExtendRelease(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	var lock acquiredJSON
	start := time.Now()
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "2s", "job").expect(t, exitOK, "acquire").decode(t, &lock)
	if lock.Key != "job" || lock.Token == "" || lock.Fence == 0 || lock.TTLMs != 2000 {
		t.Fatalf("acquire printed %+v", lock)
	}
	// The deadline is counted from the attempt, which starts after the
	// process does: between the call's start and its return plus the TTL.
	deadline, err := time.Parse(time.RFC3339Nano, lock.Deadline)
	if err != nil || deadline.Before(start) || deadline.After(time.Now().Add(2*time.Second)) {
		t.Errorf("deadline %q (%v) outside [start, return+TTL]", lock.Deadline, err)
	}

	t.Run("held", func(t *testing.T) {
		r := cli(t, "acquire", "--nodes", nodes, "--json", "--wait", "0", "job").expect(t, exitConflict, "second acquire")
		var f failureJSON
		r.decode(t, &f)
		if f.Reason != failConflict || len(f.Nodes) != 3 {
			t.Errorf("failure %+v, want reason conflict and 3 nodes", f)
		}
		if !strings.Contains(r.stderr, "held by another holder") {
			t.Errorf("stderr:\n%s", r.stderr)
		}
	})
	t.Run("inspect", func(t *testing.T) {
		var state inspectJSON
		cli(t, "inspect", "--nodes", nodes, "--json", "job").expect(t, exitOK, "inspect").decode(t, &state)
		if state.Holder != lock.Token || state.Quorum != 2 || len(state.Nodes) != 3 {
			t.Fatalf("inspect: %+v", state)
		}
		atFence := 0
		for _, n := range state.Nodes {
			if n.Holder != lock.Token || n.TTLMs <= 0 || n.TTLMs > 2000 || n.Fence == 0 || n.Fence > lock.Fence || n.Recovering {
				t.Errorf("node %+v", n)
			}
			if n.Fence == lock.Fence {
				atFence++
			}
		}
		if atFence < state.Quorum {
			t.Errorf("%d nodes have the lock's fence %d as their counter, want a quorum", atFence, lock.Fence)
		}
		text := cli(t, "inspect", "--nodes", nodes, "job").expect(t, exitOK, "inspect").stdout
		if !strings.Contains(text, "held by "+lock.Token+" on 3 of 3 nodes") {
			t.Errorf("inspect:\n%s", text)
		}
	})
	t.Run("extend", func(t *testing.T) {
		var ext extendedJSON
		cli(t, "extend", "--nodes", nodes, "--json", "--ttl", "8s", "job", lock.Token).expect(t, exitOK, "extend").decode(t, &ext)
		if ext.ValidityMs < 7000 || ext.ValidityMs > 8000 {
			t.Errorf("extend: %+v", ext)
		}
		for _, n := range cluster.Nodes() {
			pttl, err := n.Do(context.Background(), "PTTL", "job")
			if ms, _ := strconv.Atoi(pttl); err != nil || ms < 7000 {
				t.Errorf("node %d: PTTL %s after extending to 8s (%v)", n.Index(), pttl, err)
			}
		}
		text := cli(t, "extend", "--nodes", nodes, "job", lock.Token).expect(t, exitOK, "extend").stdout
		if !strings.HasPrefix(text, "extended job until ") {
			t.Errorf("extend printed %q", text)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		cli(t, "extend", "--nodes", nodes, "job", "someone-else").expect(t, exitLockLost, "extend with a wrong token")
		cli(t, "release", "--nodes", nodes, "job", "someone-else").expect(t, exitLockLost, "release with a wrong token")
		assertHeld(t, cluster, "job", lock.Token, "after a wrong token's extend and release")
	})
	t.Run("release", func(t *testing.T) {
		r := cli(t, "release", "--nodes", nodes, "--json", "job", lock.Token).expect(t, exitOK, "release")
		var rel releasedJSON
		r.decode(t, &rel)
		if !rel.Released {
			t.Errorf("release: %+v", rel)
		}
		assertReleased(t, cluster, "job", "after release")
		cli(t, "release", "--nodes", nodes, "job", lock.Token).expect(t, exitLockLost, "second release")
		cli(t, "extend", "--nodes", nodes, "job", lock.Token).expect(t, exitLockLost, "extend after release")
		text := cli(t, "inspect", "--nodes", nodes, "job").expect(t, exitOK, "inspect").stdout
		if !strings.Contains(text, "not held") {
			t.Errorf("inspect after release:\n%s", text)
		}
	})
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
	t.Run("healthy", func(t *testing.T) {
		c := newFreshCluster(t, 3)
		nodes := strings.Join(c.URLs(), ",")
		cli(t, "init", "--nodes", nodes).expect(t, exitOK, "init")
		r := cli(t, "doctor", "--nodes", nodes).expect(t, exitOK, "doctor")
		for _, want := range []string{"NODE", c.Node(0).Addr(), "7.", "master", "noeviction", "OK: no finding makes locks unsafe"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
			}
		}
		var report doctorJSON
		cli(t, "doctor", "--nodes", nodes, "--json").expect(t, exitOK, "doctor --json").decode(t, &report)
		if report.Unsafe || report.Reachable != 3 || len(report.Nodes) != 3 {
			t.Errorf("doctor --json: %+v", report)
		}
	})
	t.Run("eviction", func(t *testing.T) {
		c := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Config: []string{"maxmemory-policy allkeys-lru"}})
		r := cli(t, "doctor", "--nodes", strings.Join(c.URLs(), ",")).expect(t, exitFailure, "doctor")
		for _, want := range []string{"critical", "eviction", "allkeys-lru", "remedy: set maxmemory-policy noeviction", "UNSAFE"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
			}
		}
	})
	t.Run("duplicate", func(t *testing.T) {
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
	})
	t.Run("majority unreachable", func(t *testing.T) {
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
	})
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

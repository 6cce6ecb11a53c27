package cli

import (
	"strings"
	"testing"
	"time"
)

// --lock-delay keeps the key on the nodes for the delay past the TTL, at
// acquire and at every extend of its token, while the validity printed
// counts from the TTL; a release frees the key at once. A delay out of
// range is a usage error, and one that the recovery delay cannot cover
// is refused before anything is locked, at extend too (the token keeps its
// delay).
func TestLockDelay(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "5s", "--lock-delay", "10s", "job").expect(t, exitOK, "acquire").decode(t, &lock)
	if lock.ValidityMs > 5000 {
		t.Errorf("acquire: validity %d ms, above the 5s TTL", lock.ValidityMs)
	}
	awaitDelayed(t, nodes, lock.Token, "after acquire")
	var ext extendedJSON
	cli(t, "extend", "--nodes", nodes, "--json", "job", lock.Token).expect(t, exitOK, "extend").decode(t, &ext)
	if ext.ValidityMs > 5000 {
		t.Errorf("extend: validity %d ms, above the 5s TTL", ext.ValidityMs)
	}
	awaitDelayed(t, nodes, lock.Token, "after extend")
	r := cli(t, "extend", "--nodes", nodes, "--ttl", "25s", "--recovery-delay", "30s", "job", lock.Token).expect(t, exitUsage, "extend past the recovery delay")
	if !strings.Contains(r.stderr, "--ttl 25s plus the token's lock-delay 10s is above --recovery-delay 30s") || strings.Contains(r.stderr, "Options.") {
		t.Errorf("extend past the recovery delay: stderr:\n%s", r.stderr)
	}
	cli(t, "release", "--nodes", nodes, "job", lock.Token).expect(t, exitOK, "release")
	cli(t, "run", "--nodes", nodes, "--wait", "0", "--lock-delay", "3s", "job", "--", "true").expect(t, exitOK, "run after the release")

	for _, bad := range []string{"-1s", "2m"} {
		r = cli(t, "run", "--nodes", nodes, "--lock-delay", bad, "job", "--", "true").expect(t, exitUsage, "run --lock-delay "+bad)
		if !strings.Contains(r.stderr, "--lock-delay must be in 0..1m0s") {
			t.Errorf("run --lock-delay %s: stderr:\n%s", bad, r.stderr)
		}
	}
	r = cli(t, "elect", "--nodes", nodes, "--lock-delay", "2m", "leader", "me", "--", "true").expect(t, exitUsage, "elect --lock-delay 2m")
	if !strings.Contains(r.stderr, "redlock elect: --lock-delay must be in 0..1m0s") || !strings.Contains(r.stderr, "redlock help elect") {
		t.Errorf("elect --lock-delay 2m: stderr:\n%s", r.stderr)
	}
	r = cli(t, "acquire", "--nodes", nodes, "--ttl", "40s", "--lock-delay", "30s", "--recovery-delay", "1m", "other").expect(t, exitUsage, "acquire past the recovery delay")
	if !strings.Contains(r.stderr, "is above --recovery-delay 1m0s") {
		t.Errorf("acquire past the recovery delay: stderr:\n%s", r.stderr)
	}
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "other").expect(t, exitOK, "inspect").decode(t, &state)
	if state.Holder != "" {
		t.Errorf("a refused acquire left %q holding the key", state.Holder)
	}
}

// awaitDelayed polls 'redlock inspect' until a quorum of nodes holds job
// for token with more than its 5s TTL to live: the delay is on them.
func awaitDelayed(t *testing.T, nodes, token, when string) {
	t.Helper()
	var state inspectJSON
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		cli(t, "inspect", "--nodes", nodes, "--json", "job").expect(t, exitOK, "inspect").decode(t, &state)
		delayed := 0
		for _, n := range state.Nodes {
			if n.Holder == token && n.TTLMs > 5000 {
				delayed++
			}
		}
		if delayed >= 2 {
			return
		}
	}
	t.Fatalf("%s: inspect %+v: want 2 of 3 nodes holding the key for more than 5s", when, state)
}

// extend without --ttl keeps the token's TTL and lock-delay, and checks
// them, not the default --ttl, against --recovery-delay, in the CLI's own
// words; release takes any --recovery-delay, having no TTL of its own.
func TestExtend_checksTheTokensTTLAndDelay(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "10s", "--lock-delay", "5s", "--recovery-delay", "20s", "delayed").expect(t, exitOK, "acquire").decode(t, &lock)
	r := cli(t, "extend", "--nodes", nodes, "--recovery-delay", "12s", "delayed", lock.Token).expect(t, exitUsage, "extend past the recovery delay")
	if !strings.Contains(r.stderr, "the token's TTL 10s plus the token's lock-delay 5s is above --recovery-delay 12s") || strings.Contains(r.stderr, "Options.") {
		t.Errorf("extend past the recovery delay: stderr:\n%s", r.stderr)
	}
	cli(t, "release", "--nodes", nodes, "--recovery-delay", "12s", "delayed", lock.Token).expect(t, exitOK, "release")

	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "5s", "--recovery-delay", "8s", "short").expect(t, exitOK, "acquire").decode(t, &lock)
	cli(t, "extend", "--nodes", nodes, "--recovery-delay", "8s", "short", lock.Token).expect(t, exitOK, "extend by the token's 5s TTL")
	cli(t, "inspect", "--nodes", nodes, "--recovery-delay", "8s", "short").expect(t, exitOK, "inspect")
	cli(t, "release", "--nodes", nodes, "--recovery-delay", "8s", "short", lock.Token).expect(t, exitOK, "release")
	r = cli(t, "acquire", "--nodes", nodes, "--recovery-delay", "8s", "short").expect(t, exitUsage, "acquire by the default TTL")
	if !strings.Contains(r.stderr, "--ttl 10s (the default) is above --recovery-delay 8s") {
		t.Errorf("acquire by the default TTL: stderr:\n%s", r.stderr)
	}
}

// A reader whose TTL ran out, kept only by its lock-delay, keeps writers
// out but holds nothing: check says it is not current, inspect marks its
// TTL as the lock-delay's and says the lock is not held, and a waiting
// writer says why it waits.
func TestInspect_readerKeptByItsLockDelay(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var reader acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--shared", "--ttl", "1s", "--lock-delay", "8s", "shelf").expect(t, exitOK, "acquire").decode(t, &reader)
	var state inspectJSON
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cli(t, "inspect", "--nodes", nodes, "--json", "shelf").expect(t, exitOK, "inspect").decode(t, &state)
		delayed := 0
		for _, n := range state.Nodes {
			if n.DelayOnly {
				delayed++
			}
		}
		if delayed == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inspect %+v: want every node to keep the reader by its lock-delay alone", state)
		}
	}
	if len(state.Readers) != 0 {
		t.Errorf("inspect: readers %q on a quorum, want none: their grants ended", state.Readers)
	}
	r := cli(t, "inspect", "--nodes", nodes, "shelf").expect(t, exitOK, "inspect")
	if !strings.Contains(r.stdout, "(lock-delay)") || !strings.Contains(r.stdout, "not held: its holders' TTLs ran out; their lock-delay keeps others out on 3 of 3 nodes") {
		t.Errorf("inspect:\n%s", r.stdout)
	}
	cli(t, "check", "--nodes", nodes, "shelf", reader.Token).expect(t, exitLockLost, "check of the reader")
	r = cli(t, "run", "--nodes", nodes, "--wait", "0.3", "--verbose", "shelf", "--", "true").expect(t, exitConflict, "a writer's run")
	if !strings.Contains(r.stderr, "kept by the lock-delay of readers whose TTLs ran out") {
		t.Errorf("a writer's run: stderr:\n%s", r.stderr)
	}
}

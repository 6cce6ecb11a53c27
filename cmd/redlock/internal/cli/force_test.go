package cli

import (
	"os/user"
	"strings"
	"testing"
	"time"
)

// release --force frees a lock whoever holds it: the command that 'run'
// runs under it is stopped and run exits 77, as do extend and release of
// a forced token; a free key exits 76.
func TestRelease_force(t *testing.T) {
	_, nodes := newCluster(t, 3)
	cmd, stderr := startRun(t, nodes, "run", "--ttl", "1500ms", "--owner", "job-1", "stuck", "--", "sleep", "30")
	var state inspectJSON
	for deadline := time.Now().Add(10 * time.Second); state.Holder == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("run never took the lock")
		}
		cli(t, "inspect", "--nodes", nodes, "--json", "stuck").decode(t, &state)
	}

	var out releasedJSON
	cli(t, "release", "--nodes", nodes, "--json", "--force", "--by", "ops:bob", "stuck").expect(t, exitOK, "release --force").decode(t, &out)
	if !out.Released || out.ForcedBy != "ops:bob" || len(out.Grants) != 1 || out.Grants[0].Owner != "job-1" || out.Grants[0].Token != state.Holder {
		t.Errorf("release --force --json: %+v, want job-1's grant %s", out, state.Holder)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop its command after the lock was forced free")
	}
	if code := cmd.ProcessState.ExitCode(); code != exitTakenOver || !strings.Contains(stderr.String(), "taken over by an operator (ops:bob") ||
		strings.Contains(stderr.String(), "expired") {
		t.Errorf("run: exit %d, want %d\n%s", code, exitTakenOver, stderr.String())
	}

	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--owner", "script", "k").expect(t, exitOK, "acquire").decode(t, &lock)
	text := cli(t, "release", "--nodes", nodes, "--force", "k").expect(t, exitOK, "release --force").stdout
	if !strings.HasPrefix(text, "forced k free, held by script since ") {
		t.Errorf("release --force:\n%s", text)
	}
	text = cli(t, "inspect", "--nodes", nodes, "k").expect(t, exitOK, "inspect after release --force").stdout
	if !strings.Contains(text, "\nforced free by ") || !strings.Contains(text, ", from "+lock.Token+"\n") {
		t.Errorf("inspect after release --force:\n%s", text)
	}
	cli(t, "extend", "--nodes", nodes, "k", lock.Token).expect(t, exitTakenOver, "extend of a forced token")
	r := cli(t, "release", "--nodes", nodes, "k", lock.Token).expect(t, exitTakenOver, "release of a forced token")
	if !strings.Contains(r.stderr, "taken over by an operator") {
		t.Errorf("release of a forced token: %s", r.stderr)
	}
	r = cli(t, "release", "--nodes", nodes, "--force", "k").expect(t, exitLockLost, "release --force of a free key")
	if strings.Contains(r.stderr, "semaphore") {
		t.Errorf("release --force of a free key hints at a semaphore:\n%s", r.stderr)
	}
	// A semaphore's name is no lock: the hint names a permit's key.
	cli(t, "acquire", "--nodes", nodes, "--limit", "2", "--ttl", "20s", "sem").expect(t, exitOK, "acquire --limit 2 sem")
	r = cli(t, "release", "--nodes", nodes, "--force", "sem").expect(t, exitLockLost, "release --force of a semaphore's name")
	if !strings.Contains(r.stderr, `"sem" is a semaphore, 1 of whose permits are held`) || !strings.Contains(r.stderr, "release --force sem:permit:") {
		t.Errorf("release --force of a semaphore's name does not say how to free a permit:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "held by nobody") || strings.Contains(r.stderr, "granted") || strings.Contains(r.stderr, "this token") {
		t.Errorf("release --force of a free key: %s", r.stderr)
	}
	cli(t, "release", "--nodes", nodes, "--force", "k", lock.Token).expect(t, exitUsage, "release --force KEY TOKEN")
	cli(t, "release", "--nodes", nodes, "--force", "--by", "two words", "k").expect(t, exitUsage, "release --force --by with a space")
}

// release --force of a key that holds another program's data on a
// majority exits 78, saying which key holds what, and leaves the data as
// it is; on a minority, the others decide as for any key.
func TestRelease_forceOtherData(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "HSET", "settings", "f", "v"); err != nil {
			t.Fatal(err)
		}
	}
	r := cli(t, "release", "--nodes", nodes, "--force", "settings").expect(t, exitConfig, "release --force of a hash")
	if !strings.Contains(r.stderr, `"settings" holds other data than a lock on 3 of 3 nodes (a hash: another program's key?)`) {
		t.Errorf("release --force of a hash: stderr:\n%s", r.stderr)
	}
	var f failureJSON
	cli(t, "release", "--nodes", nodes, "--json", "--force", "settings").expect(t, exitConfig, "release --force --json of a hash").decode(t, &f)
	if f.Reason != failConfig || f.ExitCode != exitConfig || f.Key != "settings" || !strings.Contains(f.Error, "a hash") {
		t.Errorf("release --force --json of a hash: %+v", f)
	}
	for _, n := range cluster.Nodes() {
		if v, err := n.Do(bg, "HGET", "settings", "f"); err != nil || v != "v" {
			t.Errorf("node %d: the hash's field is %q (%v) after release --force, want it left as it was", n.Index(), v, err)
		}
	}

	if _, err := cluster.Node(0).Do(bg, "RPUSH", "jobs", "a"); err != nil {
		t.Fatal(err)
	}
	cli(t, "release", "--nodes", nodes, "--force", "jobs").expect(t, exitLockLost, "release --force of a list on one node of 3")
}

// Without $USER (cron, systemd), the default forcer is the process's user.
func TestDefaultBy_withoutUSER(t *testing.T) {
	t.Setenv("USER", "")
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if by := defaultBy(); !strings.HasPrefix(by, u.Username+"@") {
		t.Errorf("defaultBy() = %q without $USER, want %s@host", by, u.Username)
	}
}

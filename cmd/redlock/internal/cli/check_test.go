package cli

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// check exits 0 for the current holder, by token or fencing token, and 76
// for a stale one; 69 when too few nodes answer.
func TestCheck(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--owner", "writer-1", "res").expect(t, exitOK, "acquire").decode(t, &lock)
	assertHeld(t, cluster, "res", lock.Token, "after acquire")

	var out checkJSON
	cli(t, "check", "--nodes", nodes, "--json", "res", lock.Token).expect(t, exitOK, "check TOKEN").decode(t, &out)
	if !out.Current || out.Holder != lock.Token || out.Owner != "writer-1" || out.Fence != lock.Fence || out.Holding != 3 {
		t.Errorf("check --json: %+v", out)
	}
	if out.Reason != "" || out.ExitCode != 0 {
		t.Errorf("check --json of a current token: reason %q, exit_code %d; want neither", out.Reason, out.ExitCode)
	}
	text := cli(t, "check", "--nodes", nodes, "res", strconv.FormatUint(lock.Fence, 10)).expect(t, exitOK, "check FENCE").stdout
	if !strings.HasPrefix(text, "current: fence "+strconv.FormatUint(lock.Fence, 10)+" is the holder's, "+lock.Token+", which holds res on 3 of 3 nodes") {
		t.Errorf("check FENCE:\n%s", text)
	}
	cli(t, "check", "--nodes", nodes, "res", strconv.FormatUint(lock.Fence-1, 10)).expect(t, exitLockLost, "check of an older fence")
	cli(t, "release", "--nodes", nodes, "res", lock.Token).expect(t, exitOK, "release")
	text = cli(t, "check", "--nodes", nodes, "res", lock.Token).expect(t, exitLockLost, "check after release").stdout
	if !strings.HasPrefix(text, "not current: ") || !strings.Contains(text, "nobody holds it on a majority") {
		t.Errorf("check after release:\n%s", text)
	}
	// A reader is checked by its token; its fencing token is no writer's,
	// and the answer says that readers hold the key.
	var reader acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--shared", "doc").expect(t, exitOK, "acquire --shared").decode(t, &reader)
	out = checkJSON{}
	for deadline := time.Now().Add(10 * time.Second); !out.Current || out.Holding < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the reader never held doc on every node: %+v", out)
		}
		cli(t, "check", "--nodes", nodes, "--json", "doc", reader.Token).decode(t, &out)
	}
	if !out.Shared {
		t.Errorf("check of a reader's token --json: %+v, want shared", out)
	}
	text = cli(t, "check", "--nodes", nodes, "doc", reader.Token).expect(t, exitOK, "check of a reader's token").stdout
	if !strings.Contains(text, "holds doc as a reader on ") || strings.Contains(text, "fence") {
		t.Errorf("check of a reader's token, which has no writer's fencing token:\n%s", text)
	}
	text = cli(t, "check", "--nodes", nodes, "doc", strconv.FormatUint(reader.Fence, 10)).expect(t, exitLockLost, "check of a reader's fence").stdout
	if !strings.Contains(text, "readers hold it on a majority") || strings.Contains(text, "nobody holds it") {
		t.Errorf("check of a reader's fence:\n%s", text)
	}
	for _, i := range []int{1, 2} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	cli(t, "check", "--nodes", nodes, "res", lock.Token).expect(t, exitUnavailable, "check with 2 of 3 nodes down")
	// Its JSON says what each node answered.
	var failed failureJSON
	cli(t, "check", "--nodes", nodes, "--json", "res", lock.Token).expect(t, exitUnavailable, "check --json with 2 of 3 nodes down").decode(t, &failed)
	if len(failed.Nodes) != 3 || failed.Nodes[0].Outcome != "answered" || failed.Nodes[1].Error == "" || failed.Nodes[2].Error == "" ||
		strings.Contains(failed.Error, "within") {
		t.Errorf("check --json with 2 of 3 nodes down: %+v", failed)
	}
	cli(t, "check", "--nodes", nodes, "res").expect(t, exitUsage, "check without TOKEN")
}

// check of a key that holds another program's data says so, in text and
// in JSON: no token is current there.
func TestCheck_otherData(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "HSET", "settings", "f", "v"); err != nil {
			t.Fatal(err)
		}
	}
	text := cli(t, "check", "--nodes", nodes, "settings", "some-token").expect(t, exitLockLost, "check of a hash").stdout
	if !strings.HasPrefix(text, "not current: ") ||
		!strings.Contains(text, `; "settings" holds other data than a lock on 3 of 3 nodes (a hash: another program's key?); `) {
		t.Errorf("check of a hash:\n%s", text)
	}
	var out checkJSON
	cli(t, "check", "--nodes", nodes, "--json", "settings", "some-token").expect(t, exitLockLost, "check --json of a hash").decode(t, &out)
	if out.Current || out.Data != "hash" || out.DataNodes != 3 {
		t.Errorf("check --json of a hash: %+v, want data hash on 3 nodes", out)
	}
	out = checkJSON{}
	cli(t, "check", "--nodes", nodes, "--json", "free", "some-token").expect(t, exitLockLost, "check --json of a free key").decode(t, &out)
	if out.Data != "" || out.DataNodes != 0 {
		t.Errorf("check --json of a free key: %+v, want no data", out)
	}
	// Not current: the reason and status a failure's JSON would give.
	if out.Reason != failLost || out.ExitCode != exitLockLost {
		t.Errorf("check --json of a free key: reason %q, exit_code %d; want %q, %d", out.Reason, out.ExitCode, failLost, exitLockLost)
	}
}

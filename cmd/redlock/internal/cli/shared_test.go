package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// wantReadersShown fails the test unless text, what inspect printed for a
// key that three readers hold, shows them: a row per node with the readers
// it holds, each token on 2 or 3 of 3 nodes (each acquire returned once a
// quorum granted it), and the verdict.
func wantReadersShown(t *testing.T, text string, tokens []string) {
	t.Helper()
	rows := regexp.MustCompile(`(?m)^127\.0\.0\.1:\d+ +(?:(\d) readers? +\d[.\d]*m?s|- +-) +\d+ +ready$`).FindAllStringSubmatch(text, -1)
	shown := 0
	for _, row := range rows {
		n, _ := strconv.Atoi(row[1])
		shown += n
	}
	if len(rows) != 3 || shown < 2*len(tokens) || !strings.HasSuffix(text, "\nheld shared by 3 readers, each on at least 2 of 3 nodes\n") {
		t.Errorf("inspect of a key held by 3 readers:\n%s", text)
	}
	for _, token := range tokens {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(token) + ` +on [23] of 3 nodes, owner \S+ since \S+ \(\S+ ago\)$`).MatchString(text) {
			t.Errorf("inspect does not list the reader %s:\n%s", token, text)
		}
	}
}

// startRun starts the built command with args, its stderr kept in the
// returned buffer, to be read once it exited. It is killed when the test
// ends.
func startRun(t *testing.T, nodes string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := binaryCommand(nodes, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &stderr
}

// gated returns a shell script that logs "start NAME" to log, with the
// time in nanoseconds and the variables named in vars, waits until the
// file gate exists, then logs "stop NAME" with the time.
func gated(name, log, gate string, vars ...string) string {
	show := ""
	for _, v := range vars {
		show += ` $` + v
	}
	return `echo start ` + name + ` $(date +%s%N)` + show + ` >> ` + log +
		`; while [ ! -e ` + gate + ` ]; do sleep 0.02; done; echo stop ` + name + ` $(date +%s%N) >> ` + log
}

// event is a line of a gated script's log.
type event struct {
	what, name string
	at         int64 // Unix nanoseconds
	vars       []string
}

// readEvents parses the lines of the log that gated scripts wrote.
func readEvents(t *testing.T, log string) []event {
	t.Helper()
	var events []event
	for _, l := range readLines(t, log) {
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("log line %q", l)
		}
		at, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		events = append(events, event{what: f[0], name: f[1], at: at, vars: f[3:]})
	}
	return events
}

// heldByReaders is what a run waiting for "orders" says while two readers
// hold it. An attempt refused by a majority does not wait for the last
// node's answer, which may come in time or not.
var heldByReaders = regexp.MustCompile(`waiting for "orders" \(0s so far\): held shared by 2 readers on [23] of 3 nodes ` +
	`\(the last expires in \d[.\d]*s unless extended\)`)

// Two 'run --shared' of one key run at once; a plain run of the key waits
// until both have ended, saying that readers hold it, and a reader that
// comes while it waits waits behind it.
func TestRun_sharedReadersOverlapAndWriterWaits(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "log"), filepath.Join(dir, "go")
	var readers []*exec.Cmd
	for _, name := range []string{"r1", "r2"} {
		cmd, _ := startRun(t, nodes, "run", "--shared", "--shell", "orders", "--",
			gated(name, log, gate, envShared, envToken, envFence))
		readers = append(readers, cmd)
	}
	waitForLines(t, log, 2, 10*time.Second) // both readers hold "orders" at once
	writer, writerErr := startRun(t, nodes, "run", "--shell", "orders", "--",
		`echo start w $(date +%s%N) >> `+log+`; echo stop w $(date +%s%N) >> `+log)
	time.Sleep(holdCheck)
	if lines := readLines(t, log); len(lines) != 2 {
		t.Fatalf("the writer ran while readers held the key:\n%s", strings.Join(lines, "\n"))
	}
	r := runBinary(t, nodes, "run", "--shared", "--wait", "1s", "orders", "--", "true").
		expect(t, exitConflict, "a third reader while the writer waits")
	if !heldByReaders.MatchString(r.stderr) || !strings.Contains(r.stderr, "a writer waits for it") {
		t.Errorf("the third reader's stderr:\n%s", r.stderr)
	}

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range append(readers, writer) {
		if err := waitTimeout(cmd, 20*time.Second); err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	if !heldByReaders.MatchString(writerErr.String()) {
		t.Errorf("the writer's stderr:\n%s", writerErr)
	}
	wantReadersThenWriter(t, readEvents(t, log))
	assertReleased(t, cluster, "orders", "after the runs ended")
}

// wantReadersThenWriter checks the log of two readers r1 and r2 and a
// writer w: both readers started before either stopped, each with
// REDLOCK_SHARED=1 and a token and a fence of its own, and the writer
// started after both stopped.
func wantReadersThenWriter(t *testing.T, events []event) {
	t.Helper()
	at := map[string]int64{}
	var tokens []string
	for _, e := range events {
		at[e.what+" "+e.name] = e.at
		if e.what == "start" && e.name != "w" {
			if len(e.vars) != 3 || e.vars[0] != "1" || e.vars[2] == "0" || slices.Contains(tokens, e.vars[1]) {
				t.Errorf("reader %s: REDLOCK_SHARED, REDLOCK_TOKEN, REDLOCK_FENCE are %q", e.name, e.vars)
			}
			tokens = append(tokens, e.vars[1])
		}
	}
	if len(events) != 6 || len(at) != 6 {
		t.Fatalf("want start and stop of r1, r2 and w, got %+v", events)
	}
	if last := max(at["start r1"], at["start r2"]); last > at["stop r1"] || last > at["stop r2"] {
		t.Errorf("the readers did not overlap: %+v", events)
	}
	if at["start w"] < at["stop r1"] || at["start w"] < at["stop r2"] {
		t.Errorf("the writer started before the readers stopped: %+v", events)
	}
}

// acquire --shared prints the reader's token, which extend and release
// take with KEY as any token; other readers hold the key meanwhile, and no
// writer until the last reader is released.
func TestAcquire_sharedReleasedByKeyAndToken(t *testing.T) {
	_, nodes := newCluster(t, 3)
	text := cli(t, "acquire", "--nodes", nodes, "--shared", "orders").expect(t, exitOK, "first reader").stdout
	m := regexp.MustCompile(`^key       orders\nshared    yes, a reader\ntoken     (\S+)\nfence     [1-9]\d*\ndeadline  `).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("acquire --shared printed:\n%s", text)
	}
	first := m[1]
	var second acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--shared", "--wait", "0", "orders").expect(t, exitOK, "second reader").decode(t, &second)
	if second.Key != "orders" || !second.Shared || second.Token == first || second.Fence == 0 {
		t.Errorf("acquire --shared --json printed %+v", second)
	}
	cli(t, "acquire", "--nodes", nodes, "--wait", "0", "orders").expect(t, exitConflict, "a writer while readers hold the key")

	r := cli(t, "extend", "--nodes", nodes, "orders", first).expect(t, exitOK, "extend of a reader")
	if !strings.HasPrefix(r.stdout, "extended orders until ") {
		t.Errorf("extend printed %q", r.stdout)
	}
	r = cli(t, "release", "--nodes", nodes, "orders", first).expect(t, exitOK, "release of a reader")
	if r.stdout != "released orders\n" {
		t.Errorf("release printed %q", r.stdout)
	}
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "orders").expect(t, exitOK, "inspect").decode(t, &state)
	if !slices.Equal(state.Readers, []string{second.Token}) {
		t.Errorf("after the first reader's release, the readers are %q, want the second's %q", state.Readers, second.Token)
	}
	r = cli(t, "release", "--nodes", nodes, "orders", first).expect(t, exitLockLost, "a second release of the reader")
	if !strings.Contains(r.stderr, "other readers hold the lock shared") {
		t.Errorf("a second release of the reader: stderr:\n%s", r.stderr)
	}
	cli(t, "acquire", "--nodes", nodes, "--wait", "0", "orders").expect(t, exitConflict, "a writer while a reader holds the key")

	cli(t, "release", "--nodes", nodes, "orders", second.Token).expect(t, exitOK, "release of the last reader")
	r = cli(t, "release", "--nodes", nodes, "orders", second.Token).expect(t, exitLockLost, "a second release of the last reader")
	if !strings.Contains(r.stderr, "nobody holds the lock") {
		t.Errorf("a second release of the last reader: stderr:\n%s", r.stderr)
	}
	cli(t, "acquire", "--nodes", nodes, "--wait", "0", "orders").expect(t, exitOK, "a writer once the readers are gone")
}

// inspect of a key held shared lists the readers of each node and their
// tokens, and says how many hold it; the JSON has them too.
func TestInspect_readers(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var tokens []string
	for range 3 {
		var lock acquiredJSON
		cli(t, "acquire", "--nodes", nodes, "--json", "--shared", "orders").expect(t, exitOK, "acquire --shared").decode(t, &lock)
		tokens = append(tokens, lock.Token)
	}
	slices.Sort(tokens)

	wantReadersShown(t, cli(t, "inspect", "--nodes", nodes, "orders").expect(t, exitOK, "inspect").stdout, tokens)
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "orders").expect(t, exitOK, "inspect --json").decode(t, &state)
	if state.Holder != "" || !slices.Equal(state.Readers, tokens) || len(state.Nodes) != 3 {
		t.Fatalf("inspect --json: %+v, want the readers %q", state, tokens)
	}
	// A node may lack a reader whose acquire returned at a quorum.
	on := map[string]int{}
	for _, n := range state.Nodes {
		for _, r := range n.Readers {
			on[r]++
		}
		if n.Holder != "" || len(n.Readers) > 0 && n.TTLMs <= 0 {
			t.Errorf("node %s: %+v, want the readers %q", n.Node, n, tokens)
		}
	}
	for _, token := range tokens {
		if on[token] < 2 {
			t.Errorf("reader %s on %d nodes, want at least 2 of 3", token, on[token])
		}
	}
	if len(on) != len(tokens) {
		t.Errorf("the nodes hold the readers %v, want %q", on, tokens)
	}

	var free inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "other").expect(t, exitOK, "inspect of a free key").decode(t, &free)
	if free.Readers == nil || len(free.Readers) != 0 || free.Nodes[0].Readers == nil {
		t.Errorf("inspect --json of a free key: readers %#v, a node's %#v; want []", free.Readers, free.Nodes[0].Readers)
	}
}

// A reader refused because a writer waits for the key says, for each node
// and in JSON, that a writer is waiting, not that another holder holds it.
func TestAcquire_readerRefusedForWaitingWriter(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	cli(t, "acquire", "--nodes", nodes, "--shared", "--ttl", "20s", "orders").expect(t, exitOK, "a reader")
	startRun(t, nodes, "run", "orders", "--", "true") // a writer, waiting
	for _, n := range cluster.Nodes() {
		deadline := time.Now().Add(10 * time.Second)
		for keyCount(t, n, "redlock:queue:orders") != "1" {
			if time.Now().After(deadline) {
				t.Fatalf("node %d: the writer is not queued", n.Index())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	r := cli(t, "acquire", "--nodes", nodes, "--shared", "--wait", "0", "orders").expect(t, exitConflict, "a reader while a writer waits")
	if strings.Count(r.stderr, "  a writer is waiting\n") < 2 || strings.Contains(r.stderr, "held by another holder") {
		t.Errorf("a reader while a writer waits: stderr:\n%s", r.stderr)
	}
	var f failureJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--shared", "--wait", "0", "orders").expect(t, exitConflict, "--json").decode(t, &f)
	waiting := 0
	for _, n := range f.Nodes {
		switch n.Outcome {
		case "a writer is waiting":
			waiting++
		case "held by another holder":
			t.Errorf("--json: node %s held by another holder", n.Node)
		}
	}
	if waiting < 2 {
		t.Errorf("--json: %d nodes say a writer is waiting, want at least 2: %+v", waiting, f.Nodes)
	}
}

// keyCount returns the number of members of the sorted set key on node n.
func keyCount(t *testing.T, n *redlocktest.Node, key string) string {
	t.Helper()
	v, err := n.Do(bg, "ZCARD", key)
	if err != nil {
		t.Fatalf("ZCARD %s on node %d: %v", key, n.Index(), err)
	}
	return v
}

// A writer refused because readers hold the key says so, and how many,
// in text and in JSON; refused by a writer, it does not.
func TestAcquire_writerRefusedByReadersSaysSo(t *testing.T) {
	_, nodes := newCluster(t, 3)
	for range 2 {
		cli(t, "acquire", "--nodes", nodes, "--shared", "--ttl", "20s", "orders").expect(t, exitOK, "a reader")
	}
	says := regexp.MustCompile(`"orders" is held shared by 2 readers on [23] of 3 nodes \(the last expires in \S+ unless extended\)`)
	r := cli(t, "acquire", "--nodes", nodes, "--wait", "0", "orders").expect(t, exitConflict, "a writer while readers hold the key")
	if !says.MatchString(r.stderr) {
		t.Errorf("a writer while readers hold the key: stderr:\n%s", r.stderr)
	}
	var f failureJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--wait", "0", "orders").expect(t, exitConflict, "--json").decode(t, &f)
	if !says.MatchString(f.Error) {
		t.Errorf("a writer while readers hold the key, --json: %+v", f)
	}
	r = cli(t, "run", "--nodes", nodes, "--wait", "0", "orders", "--", "true").expect(t, exitConflict, "run while readers hold the key")
	if !says.MatchString(r.stderr) {
		t.Errorf("run while readers hold the key: stderr:\n%s", r.stderr)
	}

	cli(t, "acquire", "--nodes", nodes, "--ttl", "20s", "plain").expect(t, exitOK, "a writer")
	r = cli(t, "acquire", "--nodes", nodes, "--wait", "0", "plain").expect(t, exitConflict, "a writer while a writer holds the key")
	if strings.Contains(r.stderr, "reader") {
		t.Errorf("a writer while a writer holds the key: stderr:\n%s", r.stderr)
	}
}

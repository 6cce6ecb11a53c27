package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// helpExample returns the lines of `redlock help acquire` that its example
// script number i (from 0) is made of, as a user would paste them: the lock's,
// the semaphore's, the reader's, then that of several keys. A script starts
// with token= or tokens= and ends with its trap.
func helpExample(t *testing.T, i int) string {
	t.Helper()
	help := cli(t, "help", "acquire").expect(t, exitOK, "help acquire").stdout
	var scripts []string
	var lines []string
	for _, l := range strings.Split(help, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "token=") || strings.HasPrefix(l, "tokens="):
			lines = []string{l}
		case lines != nil && strings.HasPrefix(l, "trap "):
			scripts, lines = append(scripts, strings.Join(append(lines, l), "\n")), nil
		case lines != nil && l != "":
			lines = append(lines, l)
		}
	}
	if len(scripts) != 4 {
		t.Fatalf("help acquire has %d example scripts, want 4:\n%s", len(scripts), help)
	}
	return scripts[i]
}

// shScript runs script with bash, with the built command first in $PATH and
// its environment pointing at nodes.
func shScript(nodes, script string) result {
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(binaryCommand(nodes).Env, "PATH="+pathWithBinary())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// The example script in the help, pasted as it is into a script, stops when
// the lock is held elsewhere, and holds the lock while it goes on otherwise.
func TestContract_helpExampleScriptHoldsTheLockOrStops(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	script := strings.ReplaceAll(helpExample(t, 0), "--wait 10s", "--wait 300ms") +
		"\necho \"continued, token=$token\"\nredlock inspect nightly | tail -1\n"
	sh := func() result { return shScript(nodes, script) }

	r := sh()
	if r.code != 0 || !strings.Contains(r.stdout, "continued, token=") || !strings.Contains(r.stdout, "held by") {
		t.Fatalf("free lock: the script did not run under the lock: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	assertReleased(t, cluster, "nightly", "after the script's trap")

	cli(t, "acquire", "--nodes", nodes, "nightly").expect(t, exitOK, "the other holder's acquire")
	r = sh()
	if r.code != exitConflict || strings.Contains(r.stdout, "continued") {
		t.Errorf("held lock: exit %d, want %d without going on\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
}

// The semaphore's example script in the help, pasted with a limit of 2,
// holds a permit while it goes on and releases it at the end, and stops
// when both permits are held elsewhere.
func TestContract_helpSemaphoreScriptHoldsAPermitOrStops(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	script := strings.NewReplacer("--wait 10s", "--wait 300ms", "--limit 5", "--limit 2").Replace(helpExample(t, 1)) +
		"\necho \"continued, token=$token\"\nredlock inspect --limit 2 api | tail -1\n"

	r := shScript(nodes, script)
	if r.code != 0 || !strings.Contains(r.stdout, "continued, token=") || !strings.Contains(r.stdout, "\n1 of 2 permits held\n") {
		t.Fatalf("free permits: the script did not run holding one: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, key := range []string{"api:permit:1", "api:permit:2"} {
		assertReleased(t, cluster, key, "after the script's trap")
	}

	for range 2 {
		cli(t, "acquire", "--nodes", nodes, "--limit", "2", "api").expect(t, exitOK, "another holder's acquire")
	}
	r = shScript(nodes, script)
	if r.code != exitConflict || strings.Contains(r.stdout, "continued") {
		t.Errorf("full semaphore: exit %d, want %d without going on\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
}

// The reader's example script in the help, pasted as it is, holds the key
// shared beside other readers while it goes on and releases it at the end,
// and stops when a writer holds the key.
func TestContract_helpReaderScriptHoldsItSharedOrStops(t *testing.T) {
	_, nodes := newCluster(t, 3)
	script := strings.ReplaceAll(helpExample(t, 2), "--wait 10s", "--wait 300ms") +
		"\necho \"continued, token=$token\"\nredlock inspect orders | tail -1\n"

	var other acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--shared", "orders").expect(t, exitOK, "another reader").decode(t, &other)
	r := shScript(nodes, script)
	if r.code != 0 || !strings.Contains(r.stdout, "continued, token=") || !strings.Contains(r.stdout, "\nheld shared by 2 readers,") {
		t.Fatalf("beside another reader: the script did not run holding the key shared: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "orders").expect(t, exitOK, "inspect").decode(t, &state)
	if len(state.Readers) != 1 || state.Readers[0] != other.Token {
		t.Errorf("after the script's trap, the readers are %q, want the other reader's alone", state.Readers)
	}

	cli(t, "release", "--nodes", nodes, "orders", other.Token).expect(t, exitOK, "release of the other reader")
	cli(t, "acquire", "--nodes", nodes, "orders").expect(t, exitOK, "a writer's acquire")
	r = shScript(nodes, script)
	if r.code != exitConflict || strings.Contains(r.stdout, "continued") {
		t.Errorf("held by a writer: exit %d, want %d without going on\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
}

// pathWithBinary is $PATH with the built redlock command's directory first.
func pathWithBinary() string {
	return filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// With --json, every failure prints one JSON object with the reason and the
// exit code, including bad input and a bad node list found before any lock
// operation.
func TestContract_jsonOnEveryFailure(t *testing.T) {
	_, nodes := newCluster(t, 1)
	locked := newFreshCluster(t, 1)
	if _, err := locked.Node(0).Do(bg, "CONFIG", "SET", "requirepass", "right"); err != nil {
		t.Fatal(err)
	}
	secured := strings.Replace(locked.URLs()[0], "redis://", "redis://:wrong@", 1)
	for _, tc := range []struct {
		args   []string
		code   int
		reason failure
	}{
		{[]string{"acquire", "--json", "--nodes", nodes, "--ttl", "1ms", "k"}, exitUsage, failInvalid},
		{[]string{"acquire", "--json", "--bogus", "k"}, exitUsage, failInvalid},
		{[]string{"acquire", "--json", "--print-token", "--nodes", nodes, "k"}, exitUsage, failInvalid},
		{[]string{"check", "--json", "--nodes", nodes + ",redis://127.0.0.1:1,redis://127.0.0.1:2", "k", "token"}, exitUnavailable, failUnavailable},
		{[]string{"acquire", "--json", "--nodes", "redis://[::1", "k"}, exitConfig, failConfig},
		{[]string{"acquire", "--json", "--nodes", secured, "k"}, exitConfig, failConfig},
		{[]string{"extend", "--json", "--nodes", nodes, "k", ""}, exitUsage, failInvalid},
		{[]string{"release", "--json", "--nodes", nodes, "k", "no-such-token"}, exitLockLost, failLost},
		{[]string{"inspect", "--json", "--nodes", "127.0.0.1:1", "k"}, exitConfig, failConfig},
		{[]string{"doctor", "--json", "--nodes", "redis://127.0.0.1:1,,redis://127.0.0.1:2"}, exitConfig, failConfig},
	} {
		r := cli(t, tc.args...)
		var f failureJSON
		r.expect(t, tc.code, strings.Join(tc.args, " ")).decode(t, &f)
		if f.Reason != tc.reason || f.ExitCode != tc.code || f.Error == "" {
			t.Errorf("redlock %s: JSON %+v, want reason %q and exit code %d", strings.Join(tc.args, " "), f, tc.reason, tc.code)
		}
		if strings.Contains(r.stdout, "wrong") {
			t.Errorf("redlock %s: the password is printed: %s", strings.Join(tc.args, " "), r.stdout)
		}
	}
}

// A command without --json prints no JSON when given it: run's stdout is
// its command's, and --json is an unknown flag there like any other.
func TestContract_noJSONWhereNoneIsReported(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--json", "k", "--", "true"},
		{"run", "--bogus", "--json", "k", "--", "true"},
		{"init", "--json"},
		{"demo", "--json"},
	} {
		r := cli(t, args...).expect(t, exitUsage, strings.Join(args, " "))
		if r.stdout != "" || !strings.Contains(r.stderr, "flag provided but not defined") {
			t.Errorf("redlock %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.stdout, r.stderr)
		}
	}
}

// A release says whether the token's lock is held by another holder or by
// nobody, and its JSON names each node's outcome with the text's words.
func TestContract_releaseSaysWhyTheTokenHeldNothing(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "job").expect(t, exitOK, "acquire").decode(t, &lock)

	r := cli(t, "release", "--nodes", nodes, "--json", "job", "not-the-token").expect(t, exitLockLost, "release with a wrong token")
	var f failureJSON
	r.decode(t, &f)
	if !strings.Contains(r.stderr, "another holder has the lock") || strings.Contains(r.stderr, "redlock: ") {
		t.Errorf("wrong token: stderr:\n%s", r.stderr)
	}
	for _, n := range f.Nodes {
		if n.Outcome != "not held by this token" || !strings.Contains(r.stderr, n.Node+"  not held by this token") {
			t.Errorf("wrong token: node %s: JSON outcome %q, text:\n%s", n.Node, n.Outcome, r.stderr)
		}
	}

	cli(t, "release", "--nodes", nodes, "job", lock.Token).expect(t, exitOK, "release")
	r = cli(t, "release", "--nodes", nodes, "job", lock.Token).expect(t, exitLockLost, "second release")
	if !strings.Contains(r.stderr, "nobody holds the lock: released already, or it expired") {
		t.Errorf("second release: stderr:\n%s", r.stderr)
	}
}

// A release of a token that holds the lock on fewer than a majority of the
// nodes (the others lost it: they expired it, restarted or were flushed)
// releases it where it stands, and exits 76 as the lock was lost, where
// 'check' and 'extend' say so too.
func TestContract_releaseOfALostLockSaysItWasLost(t *testing.T) {
	cluster, nodes := newCluster(t, 5)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "20s", "job").expect(t, exitOK, "acquire").decode(t, &lock)
	for _, n := range cluster.Nodes()[2:] {
		if _, err := n.Do(bg, "DEL", "job"); err != nil {
			t.Fatal(err)
		}
	}
	// A node timeout of a second: on a busy host, a check that fewer than
	// a majority answer in time says nothing of the lock.
	r := cli(t, "release", "--nodes", nodes, "--node-timeout", "1s", "--json", "job", lock.Token).
		expect(t, exitLockLost, "release of a lost lock")
	var f failureJSON
	r.decode(t, &f)
	if f.Reason != failLost || !strings.Contains(f.Error, "of 5 nodes, fewer than a majority, and was released there") {
		t.Errorf("release of a lost lock: JSON %+v", f)
	}
	eventually(t, 5*time.Second, "the lock released on the nodes that held it", func() bool {
		for _, n := range cluster.Nodes() {
			if keyOn(t, n, "job") != "" {
				return false
			}
		}
		return true
	})
}

// extend without --ttl keeps the TTL the lock was acquired with.
func TestContract_extendKeepsTheAcquiredTTL(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "20s", "job").expect(t, exitOK, "acquire").decode(t, &lock)
	var ext extendedJSON
	cli(t, "extend", "--nodes", nodes, "--json", "job", lock.Token).expect(t, exitOK, "extend").decode(t, &ext)
	if ext.ValidityMs < 19_000 {
		t.Errorf("extend without --ttl left %d ms of a 20 s lock", ext.ValidityMs)
	}
	cli(t, "extend", "--nodes", nodes, "--json", "--ttl", "5s", "job", lock.Token).expect(t, exitOK, "extend --ttl").decode(t, &ext)
	if ext.ValidityMs > 5_000 {
		t.Errorf("extend --ttl 5s left %d ms", ext.ValidityMs)
	}
}

// Node lists are checked the same way from the flag and the environment,
// with a hint for a bare address.
func TestContract_nodeListsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		env, flag string
		want      string
	}{
		{flag: "127.0.0.1:6379", want: "write redis://127.0.0.1:6379"},
		{flag: "redis://127.0.0.1:99999", want: `port "99999"`},
		{flag: "redis://127.0.0.1:1,,redis://127.0.0.1:2", want: "entry 2 is empty"},
		{flag: " ", want: "--nodes is empty"},
		{env: "", want: "$REDLOCK_NODES is empty"},
		{env: "localhost:6379", want: "write redis://localhost:6379"},
	} {
		args := []string{"acquire", "--wait", "0"}
		if tc.flag != "" {
			args = append(args, "--nodes", tc.flag)
		}
		var r result
		if tc.flag != "" {
			r = cli(t, append(args, "k")...)
		} else {
			r = runBinary(t, tc.env, append(args, "k")...)
		}
		if r.code != exitConfig || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("nodes %q / $REDLOCK_NODES %q: exit %d, want %d and %q:\n%s", tc.flag, tc.env, r.code, exitConfig, tc.want, r.stderr)
		}
	}
}

// Waiting, a command says why on stderr, and a bounded wait ends with the
// exit code of the last reason: here, nodes that do not answer.
func TestContract_waitSaysWhyAndEndsWithTheLastReason(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, i := range []int{0, 1} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	r := cli(t, "acquire", "--nodes", nodes, "--wait", "1s", "k").expect(t, exitUnavailable, "acquire with 2 of 3 nodes down")
	for _, i := range []int{0, 1} {
		if !regexp.MustCompile(`waiting for "k" \(0s so far\): .*` + regexp.QuoteMeta(cluster.Node(i).Addr()) + ` error`).MatchString(r.stderr) {
			t.Errorf("stderr does not say that node %d does not answer:\n%s", i, r.stderr)
		}
	}

	// The default wait is forever: it still says why, at once.
	ctx, cancel := context.WithTimeout(bg, time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"run", "--nodes", nodes, "k", "--", "true"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInterrupted || !strings.Contains(stderr.String(), `redlock run: waiting for "k"`) {
		t.Errorf("run waiting forever: exit %d, want %d and a reason:\n%s", code, exitInterrupted, stderr.String())
	}
}

// A holder's lock makes a waiting acquire say who holds it.
func TestContract_waitNamesTheHolder(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "job").expect(t, exitOK, "acquire").decode(t, &lock)
	r := cli(t, "acquire", "--nodes", nodes, "--wait", "300ms", "job").expect(t, exitConflict, "second acquire")
	if !regexp.MustCompile(`held by another holder on [23] of 3 nodes \(token ` + regexp.QuoteMeta(lock.Token) + `, owner \S+, expires in`).MatchString(r.stderr) {
		t.Errorf("stderr does not name the holder:\n%s", r.stderr)
	}
}

func TestContract_versionAndPlurals(t *testing.T) {
	r := cli(t, "--version").expect(t, exitOK, "--version")
	if !strings.HasPrefix(r.stdout, "redlock ") {
		t.Errorf("--version printed %q", r.stdout)
	}
	cluster := newFreshCluster(t, 1)
	r = cli(t, "init", "--nodes", cluster.URLs()[0]).expect(t, exitOK, "init")
	if !strings.HasPrefix(r.stdout, "1 node ready: ") {
		t.Errorf("init printed %q", r.stdout)
	}
}

// A node that refuses the credentials of its URL, be it one of three, is a
// configuration error: the command fails with the config exit code before
// any lock operation, naming the node and its answer, not the password.
func TestContract_badCredentialsOnAMinorityFail(t *testing.T) {
	cluster, _ := newCluster(t, 3)
	if _, err := cluster.Node(2).Do(bg, "CONFIG", "SET", "requirepass", "right"); err != nil {
		t.Fatal(err)
	}
	urls := cluster.URLs()
	urls[2] = strings.Replace(urls[2], "redis://", "redis://:wrong@", 1)
	nodes := strings.Join(urls, ",")
	r := cli(t, "acquire", "--nodes", nodes, "--wait", "0", "job").expect(t, exitConfig, "acquire with one node refusing the password")
	if !strings.Contains(r.stderr, cluster.Node(2).Addr()+": WRONGPASS") || strings.Contains(r.stderr, "wrong@") {
		t.Errorf("stderr does not name the node and its answer, or shows the password:\n%s", r.stderr)
	}
}

// A failure says what ended a wait in words, not the context's error, and
// its JSON "error" is what the text says, in the same words: the details
// of each node are in "nodes".
func TestContract_failureJSONSaysWhatTheTextSays(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "job").expect(t, exitOK, "acquire").decode(t, &lock)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"acquire", "--wait", "300ms", "job"}, exitConflict, "not acquired: granted on 0 of 3 nodes, 2 needed (the wait ran out)"},
		{[]string{"release", "job", "not-the-token"}, exitLockLost, "lock not held: released on 0 of 3 nodes, 2 needed"},
	} {
		args := append([]string{tc.args[0], "--nodes", nodes}, tc.args[1:]...)
		text := cli(t, args...).expect(t, tc.code, strings.Join(tc.args, " "))
		var f failureJSON
		cli(t, append(args[:3:3], append([]string{"--json"}, args[3:]...)...)...).expect(t, tc.code, "--json").decode(t, &f)
		prefix := "redlock " + tc.args[0] + ": "
		var said []string
		for _, l := range strings.Split(strings.TrimSpace(text.stderr), "\n") {
			if strings.HasPrefix(l, prefix) && !strings.Contains(l, "waiting for") {
				said = append(said, strings.TrimPrefix(l, prefix))
			}
		}
		if !strings.Contains(text.stderr, prefix+tc.want+"\n") || strings.Contains(text.stderr, "context") {
			t.Errorf("redlock %s: stderr lacks %q, or names the context:\n%s", strings.Join(tc.args, " "), tc.want, text.stderr)
		}
		// The two runs read the holder's expiry at different moments.
		if untimed(f.Error) != untimed(strings.Join(said, "; ")) {
			t.Errorf("redlock %s --json: error %q, the text says %q", strings.Join(tc.args, " "), f.Error, said)
		}
	}
}

// untimed returns s with the time left of each "expires in ..." taken out.
func untimed(s string) string {
	return regexp.MustCompile(`expires in [0-9.]+[a-zµ]+`).ReplaceAllString(s, "expires in …")
}

// A key held by a string without an expiry (another library's lock that
// sets none) is waited for, and the wait says it has no expiry, not that it
// expires in 0s.
func TestContract_waitForAKeyWithoutExpiry(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "SET", "sk", "other-library-token"); err != nil {
			t.Fatal(err)
		}
	}
	r := cli(t, "acquire", "--nodes", nodes, "--wait", "1s", "sk").expect(t, exitConflict, "acquire of a key without expiry")
	if !strings.Contains(r.stderr, "(token other-library-token, no expiry") || strings.Contains(r.stderr, "expires in 0s") {
		t.Errorf("the wait does not say that the key has no expiry:\n%s", r.stderr)
	}
}

// In every JSON object a command prints, on success or failure, "nodes" is
// the list of per-node outcomes or absent, never a count, so that a script
// reads it one way whatever happened; and a failure has a failure's
// fields, inspect's too.
func TestContract_jsonNodesIsAlwaysAList(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "job").expect(t, exitOK, "acquire").decode(t, &lock)
	nodesField := func(what string, r result) {
		t.Helper()
		var out map[string]any
		r.decode(t, &out)
		if v, ok := out["nodes"]; ok {
			if _, list := v.([]any); !list {
				t.Errorf("%s: \"nodes\" is %T (%v), want a list of the nodes' outcomes or none:\n%s", what, v, v, r.stdout)
			}
		}
	}
	nodesField("check --json, current", cli(t, "check", "--nodes", nodes, "--json", "job", lock.Token).expect(t, exitOK, "check"))
	nodesField("check --json, not current", cli(t, "check", "--nodes", nodes, "--json", "job", "other").expect(t, exitLockLost, "check"))
	nodesField("list --json", cli(t, "list", "--nodes", nodes, "--json").expect(t, exitOK, "list"))
	nodesField("inspect --json", cli(t, "inspect", "--nodes", nodes, "--json", "job").expect(t, exitOK, "inspect"))
	for _, i := range []int{1, 2} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	nodesField("check --json, 2 of 3 nodes down", cli(t, "check", "--nodes", nodes, "--json", "job", lock.Token).expect(t, exitUnavailable, "check"))
	for _, args := range [][]string{{"inspect", "job"}, {"inspect", "job", "other"}, {"inspect", "--limit", "2", "sem"}, {"list"}} {
		r := cli(t, append([]string{args[0], "--nodes", nodes, "--json"}, args[1:]...)...).expect(t, exitUnavailable, args[0])
		nodesField(args[0]+" --json, 2 of 3 nodes down", r)
		// A failure's fields, as every failure has them.
		var failed failureJSON
		r.decode(t, &failed)
		if failed.Error == "" || failed.Reason != failUnavailable || failed.ExitCode != exitUnavailable {
			t.Errorf("%s --json with 2 of 3 nodes down: %+v, want a failure's error, reason and exit_code:\n%s", args[0], failed, r.stdout)
		}
	}
}

// A refusal of the node list (78) has "nodes" as every other failure
// that gets past its flags does: each entry of the list, in order, named
// as an operation's outcomes name it, "error" with why for the entries at
// fault and "not asked" for the others, as no lock operation was sent.
func TestContract_nodeListRefusalJSONHasTheNodes(t *testing.T) {
	_, nodes := newCluster(t, 1)
	locked := newFreshCluster(t, 1)
	if _, err := locked.Node(0).Do(bg, "CONFIG", "SET", "requirepass", "right"); err != nil {
		t.Fatal(err)
	}
	node := strings.TrimPrefix(nodes, "redis://")
	port := node[strings.LastIndex(node, ":")+1:]
	secured := strings.Replace(locked.URLs()[0], "redis://", "redis://:wrong@", 1)
	securedNode := strings.TrimPrefix(locked.URLs()[0], "redis://")
	type entry struct{ node, outcome, error string }
	for _, tc := range []struct {
		args []string
		want []entry
	}{
		{[]string{"acquire", "--nodes", nodes + "," + nodes, "k"},
			[]entry{{node, "not asked", ""}, {node, "error", "duplicate node: " + node + " is entries 1 and 2"}}},
		{[]string{"check", "--nodes", nodes + "," + nodes, "k", "token"},
			[]entry{{node, "not asked", ""}, {node, "error", "duplicate node"}}},
		{[]string{"inspect", "--nodes", "redis://[::1," + nodes, "k"},
			[]entry{{"redis://[::1", "error", "invalid node URL: redis://[::1: missing ']' in host"}, {node, "not asked", ""}}},
		{[]string{"list", "--nodes", nodes + ",,redis://127.0.0.1:1"},
			[]entry{{node, "not asked", ""}, {"", "error", "entry 2 is empty"}, {"127.0.0.1:1", "not asked", ""}}},
		{[]string{"extend", "--nodes", nodes + ",redis://localhost:" + port, "k", "token"},
			[]entry{{node, "not asked", ""}, {"localhost:" + port, "error", "reach one server"}}},
		{[]string{"release", "--nodes", nodes + "," + secured, "k", "token"},
			[]entry{{node, "not asked", ""}, {securedNode, "error", "credentials refused"}}},
		{[]string{"doctor", "--nodes", "redis://:wrong@[::1"},
			[]entry{{"redis://:xxxxx@[::1", "error", "invalid node URL"}}},
	} {
		what := strings.Join(tc.args, " ")
		r := cli(t, append(tc.args[:1:1], append([]string{"--json"}, tc.args[1:]...)...)...).expect(t, exitConfig, what)
		var f failureJSON
		r.decode(t, &f)
		if f.Reason != failConfig || len(f.Nodes) != len(tc.want) || strings.Contains(r.stdout, "wrong") {
			t.Errorf("redlock %s --json: %s, want reason config, %d nodes and no password", what, r.stdout, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			n := f.Nodes[i]
			if n.Node != w.node || n.Outcome != w.outcome || !strings.Contains(n.Error, w.error) || (w.error == "") != (n.Error == "") {
				t.Errorf("redlock %s --json: node %d is %+v, want %+v", what, i+1, n, w)
			}
		}
	}
}

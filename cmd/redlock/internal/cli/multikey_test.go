package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// 'run KEY1 KEY2 -- COMMAND' holds both keys while the command runs, tells
// it each key's token and fence in the order given, without the variables
// of one key that an enclosing run set, and a run of one of them waits
// until it is done; a run of several keys that finds one held says which.
func TestRun_severalKeysBlockARunOfOne(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	// As an enclosing run of one key, or of three, would have set them.
	t.Setenv(envKey, "outer")
	t.Setenv(envToken, "outer-token")
	t.Setenv(envKeyN+"3", "outer-3")
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "log"), filepath.Join(dir, "go")
	both, bothErr := startRun(t, nodes, "run", "--shell", "acct-b", "acct-a", "--",
		gated("m", log, gate, envKeys, envKeyN+"1", envKeyN+"2", envTokenN+"1", envTokenN+"2", envFenceN+"1", envFenceN+"2",
			"{"+envKey+"-unset}", "{"+envToken+"-unset}", "{"+envKeyN+"3-unset}"))
	waitForLines(t, log, 1, 10*time.Second)
	tokenB, tokenA := wantKeysEnv(t, readEvents(t, log)[0].vars)
	assertHeld(t, cluster, "acct-b", tokenB, "while the run of both keys runs")
	assertHeld(t, cluster, "acct-a", tokenA, "while the run of both keys runs")

	one, oneErr := startRun(t, nodes, "run", "--shell", "acct-a", "--",
		`echo start s $(date +%s%N) >> `+log+`; echo stop s $(date +%s%N) >> `+log)
	r := runBinary(t, nodes, "run", "--wait", "1s", "acct-c", "acct-a", "--", "true").
		expect(t, exitConflict, "a run of acct-c and acct-a")
	wantStderr(t, "a run of acct-c and acct-a", r.stderr,
		`waiting for "acct-c", "acct-a" \(0s so far\): "acct-a" held by another holder on [23] of 3 nodes \(token `+
			regexp.QuoteMeta(tokenA)+`, owner \S+, expires in `,
		// 2 of 2 when the wait ran out during an attempt, acct-c's too.
		`redlock run: [12] of 2 keys not acquired\nredlock run: "acct-a", one of them: not acquired: `)
	assertReleased(t, cluster, "acct-c", "after a run that could not have acct-a")
	time.Sleep(holdCheck)
	if lines := readLines(t, log); len(lines) != 1 {
		t.Fatalf("the run of acct-a ran while the run of both held it:\n%s", strings.Join(lines, "\n"))
	}

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := waitTimeout(both, 20*time.Second); err != nil {
		t.Errorf("the run of both keys: %v\n%s", err, bothErr)
	}
	if err := waitTimeout(one, 20*time.Second); err != nil {
		t.Errorf("the run of acct-a: %v\n%s", err, oneErr)
	}
	wantStderr(t, "the run of acct-a", oneErr.String(),
		`waiting for "acct-a" \(0s so far\): held by another holder on [23] of 3 nodes \(token `+regexp.QuoteMeta(tokenA))
	events := readEvents(t, log)
	if len(events) != 4 || events[1].what+events[1].name != "stopm" || events[2].what+events[2].name != "starts" || events[2].at < events[1].at {
		t.Errorf("want the run of acct-a to start after the run of both stopped: %+v", events)
	}
	for _, key := range []string{"acct-a", "acct-b"} {
		assertReleased(t, cluster, key, "after the runs ended")
	}
}

// wantKeysEnv checks what a run of "acct-b" and "acct-a" gave its command,
// in vars: REDLOCK_KEYS (two words), REDLOCK_KEY_1 and _2, REDLOCK_TOKEN_1
// and _2, REDLOCK_FENCE_1 and _2, then REDLOCK_KEY, REDLOCK_TOKEN and
// REDLOCK_KEY_3 as unset, and returns the tokens of acct-b and acct-a.
func wantKeysEnv(t *testing.T, vars []string) (tokenB, tokenA string) {
	t.Helper()
	want := []string{"acct-b", "acct-a", "acct-b", "acct-a", "?", "?", "?", "?", "unset", "unset", "unset"}
	ok := len(vars) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] == "?" || vars[i] == want[i]
	}
	if !ok || vars[4] == vars[5] || vars[6] == "0" || vars[7] == "0" {
		t.Fatalf("REDLOCK_KEYS (2 words), REDLOCK_KEY_1..2, REDLOCK_TOKEN_1..2, REDLOCK_FENCE_1..2, "+
			"REDLOCK_KEY, REDLOCK_TOKEN, REDLOCK_KEY_3: %q", vars)
	}
	return vars[4], vars[5]
}

// wantStderr fails the test unless stderr, of what, matches each of the
// regular expressions.
func wantStderr(t *testing.T, what, stderr string, exprs ...string) {
	t.Helper()
	for _, e := range exprs {
		if !regexp.MustCompile(e).MatchString(stderr) {
			t.Errorf("%s: stderr does not match %s:\n%s", what, e, stderr)
		}
	}
}

// 'run --shared KEY1 KEY2' reads both keys: another reader gets either,
// a writer neither.
func TestRun_severalKeysShared(t *testing.T) {
	_, nodes := newCluster(t, 3)
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "log"), filepath.Join(dir, "go")
	run, runErr := startRun(t, nodes, "run", "--shared", "--shell", "t1", "t2", "--",
		gated("m", log, gate, envShared, envTokenN+"1", envTokenN+"2"))
	waitForLines(t, log, 1, 10*time.Second)
	vars := readEvents(t, log)[0].vars
	if len(vars) != 3 || vars[0] != "1" {
		t.Fatalf("REDLOCK_SHARED, REDLOCK_TOKEN_1, REDLOCK_TOKEN_2: %q", vars)
	}
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "t2").expect(t, exitOK, "inspect t2").decode(t, &state)
	if len(state.Readers) != 1 || state.Readers[0] != vars[2] {
		t.Errorf("t2's readers are %q, want REDLOCK_TOKEN_2 %s", state.Readers, vars[2])
	}
	var reader acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--shared", "--wait", "0", "t2").expect(t, exitOK, "another reader of t2").decode(t, &reader)
	cli(t, "release", "--nodes", nodes, "t2", reader.Token).expect(t, exitOK, "release of the other reader")
	for _, key := range []string{"t1", "t2"} {
		cli(t, "acquire", "--nodes", nodes, "--wait", "0", key).expect(t, exitConflict, "a writer of "+key)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := waitTimeout(run, 20*time.Second); err != nil {
		t.Fatalf("run --shared t1 t2: %v\n%s", err, runErr)
	}
	cli(t, "acquire", "--nodes", nodes, "--wait", "0", "t1").expect(t, exitOK, "a writer of t1 after the run")
}

// Several keys with --limit, --limit with --shared, a key given twice, and
// no key before the -- that ends the flags are usage errors, found before any node is asked: the nodes here do not
// answer.
func TestRun_severalKeysUsageErrors(t *testing.T) {
	const nodes = "redis://127.0.0.1:1"
	marker := filepath.Join(t.TempDir(), "ran")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--limit", "2", "k1", "k2", "--", "touch", marker}, "--limit takes a permit of one KEY, not the locks of 2 keys"},
		{[]string{"run", "--limit", "2", "--shared", "k", "--", "touch", marker}, "--limit and --shared do not go together"},
		{[]string{"acquire", "--limit", "2", "--shared", "k"}, "--limit and --shared do not go together"},
		{[]string{"run", "k1", "k2", "k1", "--", "touch", marker}, `KEY "k1" is given twice`},
		{[]string{"run", "k1", "", "--", "touch", marker}, "KEY is empty"},
		{[]string{"run", "k1", "--shared", "k2", "--", "touch", marker}, `flags go before KEY; "--shared" came after`},
		{[]string{"run", "--", "--", "touch", marker}, "missing KEY before --"},
		{[]string{"run", "--", "touch", marker}, "missing KEY before --"},
		{[]string{"run", "--wait", "1", "--", "touch", marker}, "missing KEY before --"},
		{[]string{"elect", "--", "leader", "v1", "touch", marker}, "want NAME VALUE [-- COMMAND [ARGS...]]"},
	} {
		r := cli(t, append([]string{tc.args[0], "--nodes", nodes}, tc.args[1:]...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("redlock %s: exit %d, want %d and %q:\n%s", strings.Join(tc.args, " "), r.code, exitUsage, tc.want, r.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}
}

// The variables of several keys are numbered in the order given.
func TestRun_severalKeysEnvironmentNames(t *testing.T) {
	for _, name := range []string{envKeyN + "1", envTokenN + "12", envFenceN + "3", envKeys, envShared, envKey} {
		if !runVariable(name) {
			t.Errorf("%s is not a variable of a run", name)
		}
	}
	for _, name := range []string{envNodes, envKeyN, envKeyN + "x", "REDLOCK_KEYRING", envTokenN + "1a"} {
		if runVariable(name) {
			t.Errorf("%s is taken for a variable of a run", name)
		}
	}
}

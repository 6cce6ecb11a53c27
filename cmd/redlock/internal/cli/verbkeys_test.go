package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// pollReleased waits until a majority of the cluster's nodes no longer
// hold key, and fails the test if that does not happen within timeout: a
// release returns at a quorum, and the last nodes may answer later.
func pollReleased(t *testing.T, c *redlocktest.Cluster, key string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		holding := 0
		for _, n := range c.Nodes() {
			if keyOn(t, n, key) != "" {
				holding++
			}
		}
		if holding < len(c.Nodes())/2+1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q is still held on %d of %d nodes after %s", key, holding, len(c.Nodes()), timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// acquire and inspect take several keys as run does: acquire takes them
// all or none, and prints each lock; inspect shows each key. With --json
// each prints one object, {"keys", "locks"}, a failure's naming the keys.
func TestAcquireInspect_severalKeys(t *testing.T) {
	cluster, nodes := newCluster(t, 3)

	var set struct { // acquiredSetJSON, as a script reads it
		Keys  []string       `json:"keys"`
		Locks []acquiredJSON `json:"locks"`
	}
	cli(t, "acquire", "--nodes", nodes, "--json", "acct-a", "acct-b").expect(t, exitOK, "acquire acct-a acct-b").decode(t, &set)
	if len(set.Keys) != 2 || set.Keys[1] != "acct-b" || len(set.Locks) != 2 ||
		set.Locks[0].Key != "acct-a" || set.Locks[1].Key != "acct-b" || set.Locks[0].Token == set.Locks[1].Token {
		t.Fatalf("acquire --json of two keys: %+v", set)
	}
	for _, l := range set.Locks {
		assertHeld(t, cluster, l.Key, l.Token, "after acquire of two keys")
		if l.Deadline == "" || l.ValidityMs <= 0 || l.Fence == 0 {
			t.Errorf("lock %+v lacks its deadline or fence", l)
		}
	}

	t.Run("all or none", func(t *testing.T) {
		cli(t, "acquire", "--nodes", nodes, "-n", "acct-c", "acct-b").expect(t, exitConflict, "acquire acct-c acct-b")
		pollReleased(t, cluster, "acct-c", 5*time.Second)
		var fail struct {
			failureJSON
			Keys []string `json:"keys"`
		}
		cli(t, "acquire", "--nodes", nodes, "--json", "--wait", "0", "acct-c", "acct-b").
			expect(t, exitConflict, "acquire --json acct-c acct-b").decode(t, &fail)
		if fail.Reason != failConflict || fail.Key != "acct-b" || strings.Join(fail.Keys, " ") != "acct-c acct-b" ||
			!strings.Contains(fail.Error, `"acct-b"`) {
			t.Errorf("failure of two keys: %+v; want the keys, and the one held as key", fail)
		}
	})

	t.Run("tokens and text", func(t *testing.T) {
		tokens := strings.Fields(cli(t, "acquire", "--nodes", nodes, "--print-token", "x", "y").expect(t, exitOK, "acquire --print-token x y").stdout)
		if len(tokens) != 2 {
			t.Fatalf("--print-token of two keys printed %q", tokens)
		}
		var state struct { // inspectSetJSON, as a script reads it
			Keys  []string      `json:"keys"`
			Locks []inspectJSON `json:"locks"`
		}
		cli(t, "inspect", "--nodes", nodes, "--json", "x", "y").expect(t, exitOK, "inspect --json x y").decode(t, &state)
		if strings.Join(state.Keys, " ") != "x y" || len(state.Locks) != 2 ||
			state.Locks[0].Key != "x" || state.Locks[0].Holder != tokens[0] || state.Locks[1].Holder != tokens[1] {
			t.Errorf("inspect --json x y: %+v, want the holders %q", state, tokens)
		}
		text := cli(t, "inspect", "--nodes", nodes, "x", "y").expect(t, exitOK, "inspect x y").stdout
		if !regexp.MustCompile(`(?s)^lock "x":\n.*held by ` + tokens[0] + ` on .*\n\nlock "y":\n.*held by ` + tokens[1] + ` on `).MatchString(text) {
			t.Errorf("inspect x y:\n%s", text)
		}
		out := cli(t, "acquire", "--nodes", nodes, "p", "q").expect(t, exitOK, "acquire p q").stdout
		if !regexp.MustCompile(`(?s)^key       p\n.*\n\nkey       q\n`).MatchString(out) {
			t.Errorf("acquire p q:\n%s", out)
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"acquire", "k", "k"}, `KEY "k" is given twice`},
			{[]string{"acquire", "--limit", "2", "k", "l"}, "--limit takes a permit of one KEY"},
			{[]string{"inspect", "--limit", "2", "k", "l"}, "--limit takes a permit of one KEY"},
			{[]string{"inspect", "k", "--json"}, "flags go before KEY"},
			{[]string{"inspect"}, "want KEY [KEY...]"},
		} {
			r := cli(t, append(tc.args[:1:1], append([]string{"--nodes", nodes}, tc.args[1:]...)...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("redlock %s: exit %d, want %d and %q:\n%s", strings.Join(tc.args, " "), r.code, exitUsage, tc.want, r.stderr)
			}
		}
	})
}

// The help's example script of several keys, pasted as it is, holds both
// keys while it goes on and releases them at the end, and stops holding
// neither when one of them is held elsewhere.
func TestContract_helpSeveralKeysScriptHoldsAllOrStops(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	script := strings.ReplaceAll(helpExample(t, 3), "--wait 10s", "--wait 300ms") +
		"\necho \"continued, $t17 $t42\"\nredlock inspect acct-17 acct-42 | grep -c '^held by'\n"

	r := shScript(nodes, script)
	if r.code != 0 || !regexp.MustCompile(`continued, \S+ \S+\n2\n`).MatchString(r.stdout) {
		t.Fatalf("free keys: the script did not run holding both: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, key := range []string{"acct-17", "acct-42"} {
		assertReleased(t, cluster, key, "after the script's trap")
	}

	cli(t, "acquire", "--nodes", nodes, "acct-42").expect(t, exitOK, "another holder's acquire")
	r = shScript(nodes, script)
	if r.code != exitConflict || strings.Contains(r.stdout, "continued") {
		t.Errorf("one key held elsewhere: exit %d, want %d without going on\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
	pollReleased(t, cluster, "acct-17", 5*time.Second)
}

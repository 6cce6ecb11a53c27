package cli

import (
	"encoding/json"
	"flag"
	"regexp"
	"strings"
	"testing"
)

func TestHelp_statesEveryDefaultAndExitCode(t *testing.T) {
	main := cli(t, "--help").expect(t, exitOK, "redlock --help")
	for _, c := range commands() {
		if !strings.Contains(main.stdout, "redlock "+c.name+" ") {
			t.Errorf("redlock --help does not list %q", c.name)
		}
		t.Run(c.name, func(t *testing.T) { wantCommandHelp(t, c) })
	}
	// The codes the issue names must be distinct from each other.
	seen := map[int]string{}
	for name, c := range map[string]int{"usage": exitUsage, "unavailable": exitUnavailable, "conflict": exitConflict,
		"lost": exitLockLost, "config": exitConfig, "failure": exitFailure} {
		if other, dup := seen[c]; dup {
			t.Errorf("exit codes %s and %s are both %d", name, other, c)
		}
		seen[c] = name
	}
}

// wantCommandHelp fails the test unless 'redlock help' and --help print the
// same help for c, which states the default of every flag and every exit
// code.
func wantCommandHelp(t *testing.T, c *command) {
	help := cli(t, "help", c.name).expect(t, exitOK, "redlock help "+c.name).stdout
	if flagHelp := cli(t, c.name, "--help").expect(t, exitOK, "redlock "+c.name+" --help").stdout; flagHelp != help {
		t.Errorf("'redlock %s --help' differs from 'redlock help %s'", c.name, c.name)
	}
	fs := newFlagSet(c.name)
	c.setup(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if target := aliasOf(f); target != "" {
			wantAlias(t, help, f, target)
			return
		}
		wantFlagDefault(t, help, f)
	})
	if c.name != "demo" && !strings.Contains(help, "--nodes") {
		t.Errorf("no --nodes flag")
	}
	if n == 0 {
		t.Errorf("no flags")
	}
	exits := help[strings.Index(help, "\nExit codes:\n"):]
	for _, e := range c.exits {
		if !strings.Contains(exits, "  "+e.code+" ") {
			t.Errorf("exit code %s is not documented", e.code)
		}
	}
	for _, want := range []string{"64"} {
		if !strings.Contains(exits, want) {
			t.Errorf("exit code %s is not documented", want)
		}
	}
}

// wantFlagDefault fails the test unless help has an entry for f that states
// its default.
func wantFlagDefault(t *testing.T, help string, f *flag.Flag) {
	t.Helper()
	i := strings.Index(help, "\n  --"+f.Name)
	if i < 0 {
		t.Errorf("flag --%s is not in the help", f.Name)
		return
	}
	entry := help[i+1:]
	if j := strings.Index(entry[1:], "\n  --"); j >= 0 {
		entry = entry[:j+1]
	}
	entry = strings.Join(strings.Fields(entry), " ")
	if want := "(default " + defaultText(f) + ")"; !strings.Contains(entry, want) {
		t.Errorf("help of --%s does not state %q: %s", f.Name, want, entry)
	}
}

// wantAlias fails the test unless help lists f, an alias of the flag
// target, right after target's entry, saying which flag it sets.
func wantAlias(t *testing.T, help string, f *flag.Flag, target string) {
	t.Helper()
	i := strings.Index(help, "\n  --"+target)
	j := strings.Index(help, "\n  "+dashed(f.Name)+"\n")
	if j < 0 {
		j = strings.Index(help, "\n  "+dashed(f.Name)+" ")
	}
	if i < 0 || j < i || strings.Contains(help[i+1:j], "\n  --") {
		t.Errorf("alias %s is not listed right after --%s", dashed(f.Name), target)
		return
	}
	if !strings.Contains(f.Usage, "--"+target) {
		t.Errorf("the help of %s does not name --%s: %s", dashed(f.Name), target, f.Usage)
	}
}

func TestHelp_defaultsShown(t *testing.T) {
	help := cli(t, "help", "run").stdout
	for _, want := range []string{
		"--ttl duration", "(default 10s)",
		"--node-timeout duration", "(default 50ms)",
		"--retry-delay duration", "(default 200ms)",
		"--wait duration", "(default forever)",
		"--conflict-exit-code int", "(default 75)",
		"--kill-grace duration", "(default: until the lock's validity deadline",
		"(default redis://127.0.0.1:6379)",
		"(default 30s)",
		"REDLOCK_KEY", "REDLOCK_TOKEN", "REDLOCK_FENCE", "REDLOCK_DEADLINE", "REDLOCK_HELD",
		"REDLOCK_PERMIT", "REDLOCK_LIMIT",
		"REDLOCK_KEYS", "REDLOCK_KEY_i", "REDLOCK_TOKEN_i", "REDLOCK_FENCE_i", "REDLOCK_SHARED",
		"--limit N", "redlock run --limit 5 ",
		"--shared", "redlock run --shared orders -- ", "KEY [KEY...] -- COMMAND", "redlock run acct-17 acct-42 acct-99 -- ",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("'redlock help run' lacks %q", want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"help", "frobnicate"}, "unknown command"},
		{[]string{"run"}, "missing KEY"},
		{[]string{"run", "k"}, "missing COMMAND"},
		{[]string{"run", "k", "--"}, "missing COMMAND"},
		{[]string{"run", "true"}, `missing COMMAND after KEY "true" (if "true" is the command, put the KEY before it)`},
		{[]string{"run", "--", "true"}, "missing KEY before --"},
		{[]string{"check", "k", "0"}, "fencing token is 0"},
		{[]string{"check", "k", "99999999999999999999999"}, "the fencing token 99999999999999999999999 is out of range"},
		{[]string{"acquire", "--nodes", "redis://127.0.0.1:1", "-n", "--owner", "", "k"}, "empty: give 1 to 255 bytes, or leave --owner out for the default"},
		{[]string{"elect", "el", "bad value", "--", "true"}, `VALUE "bad value" must be 1 to 255 bytes of printable ASCII without spaces`},
		{[]string{"run", "--bogus", "k", "--", "true"}, "flag provided but not defined: -bogus"},
		{[]string{"run", "k", "--wait", "0", "--", "true"}, "flags go before KEY"},
		{[]string{"run", "--ttl", "100ms", "k", "--", "true"}, "below the 500ms minimum"},
		{[]string{"run", "--wait", "soon", "k", "--", "true"}, "not a duration"},
		{[]string{"run", "--conflict-exit-code", "300", "k", "--", "true"}, "0..255"},
		{[]string{"acquire"}, "want KEY"},
		{[]string{"acquire", "--ttl", "1m", "k"}, "raise --recovery-delay to at least 1m0s on every client of these nodes together"},
		{[]string{"acquire", "--ttl", "1m", "k"}, "use 'redlock run', which renews the lock"},
		{[]string{"extend", "--ttl", "1m", "k", "t"}, "extend it again before each --ttl passes"},
		{[]string{"extend", "--ttl", "1m", "k", "t"}, "raise --recovery-delay to at least 1m0s on every client"},
		{[]string{"run", "--ttl", "1m", "k", "--", "true"}, "'redlock run' renews the lock as long as its command runs"},
		{[]string{"acquire", "k", "--json"}, "flags go before KEY"},
		{[]string{"extend", "k"}, "want KEY TOKEN"},
		{[]string{"release", "k", "t", "--json"}, "flags go before KEY"},
		{[]string{"doctor", "extra"}, "takes no arguments, got 1"},
		{[]string{"acquire", "--ttl", "5ms", "k"}, "below the 500ms minimum"},
		{[]string{"extend", "--ttl", "1ms", "k", "t"}, "below the 500ms minimum"},
		{[]string{"demo", "--ttl", "100ms"}, "below the 500ms minimum"},
		{[]string{"extend", "k", ""}, "TOKEN is empty"},
		{[]string{"release", "", "t"}, "KEY is empty"},
		{[]string{"help", "bogus"}, "Run 'redlock help' for the list of commands"},
		{[]string{"acquire", "--wait-replicas", "-1", "k"}, "--wait-replicas must not be negative"},
		{[]string{"demo", "--workers", "0"}, "--workers must be 1 to 9"},
	} {
		r := cli(t, tc.args...)
		if r.code != exitUsage {
			t.Errorf("redlock %s: exit status %d, want %d\n%s", strings.Join(tc.args, " "), r.code, exitUsage, r.stderr)
		}
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("redlock %s: stderr lacks %q:\n%s", strings.Join(tc.args, " "), tc.want, r.stderr)
		}
	}
}

// A flag after KEY, or before the command, is refused, as JSON too under
// --json, wherever --json is; no argument order that worked before stops
// working, and a command's arguments that look like flags are its own.
func TestUsageErrors_flagOutOfPlace(t *testing.T) {
	cluster, _ := newCluster(t, 1)
	nodes := cluster.URLs()[0]
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--nodes", nodes, "k", "tok", "--json"}, `flags go before KEY; "--json" came after`},
		{[]string{"check", "--nodes", nodes, "k", "--json"}, `flags go before KEY; "--json" came after`},
		{[]string{"check", "--json", "k", "tok", "--nodes", nodes}, `flags go before KEY; "--nodes" came after`},
		{[]string{"--json", "check", "k", "tok", "--nodes", nodes}, `flags go after the command; "--json" came before check`},
		{[]string{"acquire", "--nodes", nodes, "k", "--json"}, `flags go before KEY; "--json" came after`},
		{[]string{"release", "--nodes", nodes, "--force", "k", "--json"}, `flags go before KEY; "--json" came after`},
		{[]string{"list", "--nodes", nodes, "p", "--json"}, `flags go before PREFIX; "--json" came after`},
		{[]string{"doctor", "--nodes", nodes, "extra", "--json"}, `flags go right after the command; "--json" came after "extra"`},
		{[]string{"doctor", "--json", "--nodes", nodes, "extra", "-x"}, "takes no arguments, got 2"},
		{[]string{"frobnicate", "--json"}, `unknown command "frobnicate"`},
	} {
		r := cli(t, tc.args...)
		var f failureJSON
		if err := json.Unmarshal([]byte(r.stdout), &f); err != nil || r.code != exitUsage || f.ExitCode != exitUsage ||
			f.Reason != failInvalid || !strings.Contains(f.Error, tc.want) || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("redlock %s: exit %d, want %d and %q as JSON on stdout and on stderr\nstdout:\n%s\nstderr:\n%s",
				strings.Join(tc.args, " "), r.code, exitUsage, tc.want, r.stdout, r.stderr)
		}
	}
	cli(t, "init", "--nodes", nodes, "extra", "-x").expect(t, exitUsage, "init with arguments")
	var out checkJSON
	cli(t, "check", "--json", "--nodes", nodes, "--", "-k", "--json").expect(t, exitLockLost, "check -- -k --json").decode(t, &out)
	if out.Key != "-k" || out.Current {
		t.Errorf("check -- -k --json: %+v", out)
	}
	r := runBinary(t, nodes, "run", "k", "echo", "--json", "--wait").expect(t, exitOK, "run k echo --json --wait")
	if r.stdout != "--json --wait\n" {
		t.Errorf("run k echo --json --wait printed %q", r.stdout)
	}
}

func TestNodes_passwordNeverPrinted(t *testing.T) {
	const secret = "s3cr3t-pw"
	for _, tc := range []struct {
		name  string
		nodes string
		args  []string
		want  int
	}{
		{"bad port", "redis://:" + secret + "@127.0.0.1:notaport", []string{"acquire", "--wait", "0", "k"}, exitConfig},
		{"bad scheme", "http://user:" + secret + "@127.0.0.1:1", []string{"inspect", "k"}, exitConfig},
		{"unreachable", "redis://:" + secret + "@127.0.0.1:1", []string{"acquire", "--wait", "0", "k"}, exitUnavailable},
		{"unreachable, json", "redis://:" + secret + "@127.0.0.1:1", []string{"acquire", "--json", "--wait", "0", "k"}, exitUnavailable},
		{"duplicate", "redis://:" + secret + "@127.0.0.1:1,redis://:" + secret + "@127.0.0.1:1", []string{"doctor"}, exitFailure},
		{"duplicate, run", "redis://:" + secret + "@127.0.0.1:1,redis://:" + secret + "@127.0.0.1:1", []string{"run", "k", "true"}, exitConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{tc.args[0], "--nodes", tc.nodes}, tc.args[1:]...)
			r := cli(t, args...)
			if r.code != tc.want {
				t.Errorf("exit status %d, want %d\n%s", r.code, tc.want, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("the password appears in the output:\n%s\n%s", r.stdout, r.stderr)
			}
			if r.stdout+r.stderr == "" {
				t.Errorf("no message")
			}
		})
	}
}

// 'redlock help NAME' answers for every command the command list names,
// help and version included.
func TestHelp_everyListedCommand(t *testing.T) {
	list := cli(t, "help").expect(t, exitOK, "help").stdout
	names := regexp.MustCompile(`(?m)^  redlock (\w+) `).FindAllStringSubmatch(list, -1)
	if len(names) < 10 {
		t.Fatalf("the command list names %d commands:\n%s", len(names), list)
	}
	for _, m := range names {
		r := cli(t, "help", m[1])
		if r.code != exitOK || !strings.Contains(r.stdout, "redlock "+m[1]) {
			t.Errorf("redlock help %s: exit %d\n%s%s", m[1], r.code, r.stdout, r.stderr)
		}
	}
}

// The help of --metrics-addr states the address it listens on without the
// flag, not "none" beside it.
func TestHelp_metricsAddrStatesItsDefault(t *testing.T) {
	for _, c := range commands() {
		help := strings.Join(strings.Fields(cli(t, "help", c.name).stdout), " ")
		i := strings.Index(help, "--metrics-addr host:port ")
		if i < 0 {
			continue
		}
		entry := help[i:]
		entry = entry[:strings.Index(entry, "--node-timeout")]
		if strings.Contains(entry, "(default none)") || !strings.Contains(entry, "else localhost:9464)") {
			t.Errorf("redlock help %s: %s", c.name, entry)
		}
	}
}

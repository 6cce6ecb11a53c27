package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What flock users type works: -n (one attempt), -w SECONDS (a bounded
// wait), -E CODE (the exit status of a conflict), and bare numbers of
// seconds for --wait and the other durations people think of in seconds.
func TestRun_flockHabits(t *testing.T) {
	_, nodes := newCluster(t, 3)
	cli(t, "acquire", "--nodes", nodes, "--ttl", "20s", "busy").expect(t, exitOK, "acquire busy")

	t.Run("-n", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "ran")
		start := time.Now()
		cli(t, "run", "--nodes", nodes, "-n", "busy", "--", "touch", marker).expect(t, exitConflict, "run -n busy")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("-n took %s", took)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the command ran without the lock")
		}
		cli(t, "acquire", "--nodes", nodes, "-n", "busy").expect(t, exitConflict, "acquire -n busy")
	})
	t.Run("-E", func(t *testing.T) {
		cli(t, "run", "--nodes", nodes, "-n", "-E", "9", "busy", "--", "true").expect(t, 9, "run -n -E 9 busy")
		cli(t, "elect", "--nodes", nodes, "-n", "-E", "8", "busy", "v", "--", "true").expect(t, 8, "elect -n -E 8 busy")
	})
	t.Run("-E 0", func(t *testing.T) {
		// "Exit 0 when it runs elsewhere": the command does not run.
		marker := filepath.Join(t.TempDir(), "ran")
		cli(t, "run", "--nodes", nodes, "-n", "-E", "0", "busy", "--", "touch", marker).expect(t, exitOK, "run -n -E 0 busy")
		cli(t, "elect", "--nodes", nodes, "--wait", "0", "-E", "0", "busy", "v", "--", "touch", marker).expect(t, exitOK, "elect --wait 0 -E 0 busy")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the command ran without the lock")
		}
	})
	t.Run("-E 0 is silent", func(t *testing.T) {
		// As flock -n -E 0: a lock held elsewhere is a success, and says
		// nothing on stderr; --verbose says it, and any other code too.
		for _, args := range [][]string{
			{"run", "-n", "-E", "0", "busy", "--", "true"},
			{"run", "--wait", "0", "--conflict-exit-code", "0", "busy", "--", "true"},
			{"run", "-n", "-E", "0", "--log-format", "json", "busy", "--", "true"},
			{"elect", "-n", "-E", "0", "busy", "v", "--", "true"},
			// A bounded wait for another holder says nothing either.
			{"run", "-w", "0.3", "-E", "0", "busy", "--", "true"},
			// Values written against their flags, as getopt takes them.
			{"run", "-nE0", "busy", "--", "true"},
			{"run", "-w0.3", "-E0", "busy", "--", "true"},
		} {
			r := cli(t, append(args[:1:1], append([]string{"--nodes", nodes}, args[1:]...)...)...).
				expect(t, exitOK, strings.Join(args, " "))
			if r.stderr != "" || r.stdout != "" {
				t.Errorf("redlock %s wrote:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.stdout, r.stderr)
			}
		}
		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"run", "-n", "-E", "0", "--verbose", "busy", "--", "true"}, exitOK},
			{[]string{"run", "-n", "-E", "9", "busy", "--", "true"}, 9},
			{[]string{"run", "-n", "busy", "--", "true"}, exitConflict},
			{[]string{"run", "-n", "-E7", "busy", "--", "true"}, 7},
			{[]string{"run", "-w0.3", "-E0", "--verbose", "busy", "--", "true"}, exitOK},
			{[]string{"elect", "-n", "-E", "0", "--verbose", "busy", "v", "--", "true"}, exitOK},
		} {
			r := cli(t, append(tc.args[:1:1], append([]string{"--nodes", nodes}, tc.args[1:]...)...)...).
				expect(t, tc.code, strings.Join(tc.args, " "))
			if !strings.Contains(r.stderr, "not acquired: granted on 0 of 3 nodes") {
				t.Errorf("redlock %s does not say why:\n%s", strings.Join(tc.args, " "), r.stderr)
			}
		}
	})
	t.Run("-w", func(t *testing.T) {
		start := time.Now()
		cli(t, "run", "--nodes", nodes, "-w", "1", "busy", "--", "true").expect(t, exitConflict, "run -w 1 busy")
		if took := time.Since(start); took < time.Second {
			t.Errorf("-w 1 gave up after %s", took)
		}
		start = time.Now()
		cli(t, "acquire", "--nodes", nodes, "-w", "0.3", "busy").expect(t, exitConflict, "acquire -w 0.3 busy")
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Errorf("-w 0.3 gave up after %s", took)
		}
	})
	t.Run("bare seconds", func(t *testing.T) {
		cli(t, "run", "--nodes", nodes, "--wait", "1", "-E", "3", "--ttl", "2", "--kill-grace", "1",
			"free", "--", "true").expect(t, exitOK, "run --wait 1 --ttl 2 --kill-grace 1")
		var lock acquiredJSON
		cli(t, "acquire", "--nodes", nodes, "--json", "--wait", ".5", "--ttl", "1.5", "--recovery-delay", "30",
			"other").expect(t, exitOK, "acquire --ttl 1.5").decode(t, &lock)
		if lock.TTLMs != 1500 {
			t.Errorf("--ttl 1.5: ttl_ms %d, want 1500", lock.TTLMs)
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"run", "-n", "--wait", "5s", "busy", "--", "true"}, "-n and --wait set the same flag, --wait: give one of them"},
			{[]string{"run", "-w", "1", "-n", "busy", "--", "true"}, "-n and -w set the same flag"},
			{[]string{"run", "-E", "3", "--conflict-exit-code", "4", "busy", "--", "true"}, "give one of them"},
			{[]string{"run", "-n=false", "busy", "--", "true"}, "takes no value: it is --wait 0"},
			{[]string{"run", "-E", "300", "busy", "--", "true"}, "0..255"},
			{[]string{"acquire", "-w", "soon", "busy"}, "not a duration"},
			{[]string{"acquire", "--ttl", "1x", "busy"}, "not a duration"},
			{[]string{"acquire", "--node-timeout", "50", "busy"}, `"50" has no unit: write 50ms or 50s`},
			{[]string{"acquire", "--retry-delay", "1", "busy"}, "has no unit"},
			{[]string{"acquire", "--node-timeout", "100ms", "--max-node-timeout", "50ms", "busy"}, "--max-node-timeout 50ms is below --node-timeout 100ms"},
			{[]string{"run", "--wait", "3s", "--retry-delay", "0s", "busy", "--", "true"}, "--retry-delay 0s is below 10ms: a waiter would ask every node again without a pause"},
			{[]string{"acquire", "--retry-delay", "1ns", "busy"}, "--retry-delay 1ns is below 10ms"},
			{[]string{"acquire", "--node-timeout", "1ns", "--ttl", "2s", "busy"}, "--node-timeout 1ns is below the 1ms minimum"},
			{[]string{"run", "--node-timeout", "20s", "-n", "busy", "--", "true"}, "--node-timeout 20s is not small against --ttl 10s (the default)"},
			{[]string{"acquire", "--ttl", "1s", "--node-timeout", "600ms", "busy"}, "--node-timeout 600ms is not small against --ttl 1s:"},
			{[]string{"acquire", "--nodes", "redis://127.0.0.1:1", "busy"}, "--nodes given 2 times: give it once, with every value in it"},
			{[]string{"acquire", "--wait=-1", "busy"}, `"-1" for flag -wait: -1 is negative`},
			{[]string{"acquire", "--ttl", "99999999999", "busy"}, `"99999999999" is too long: a duration is at most 2562047h`},
			{[]string{"acquire", "--node-timeout", "99999999999h", "busy"}, "is too long"},
			{[]string{"run", "--nodes=redis://127.0.0.1:1", "-n", "busy", "--", "true"}, "--nodes given 2 times"},
		} {
			r := cli(t, append(tc.args[:1:1], append([]string{"--nodes", nodes}, tc.args[1:]...)...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("redlock %s: exit %d, want %d and %q:\n%s", strings.Join(tc.args, " "), r.code, exitUsage, tc.want, r.stderr)
			}
		}
	})
}

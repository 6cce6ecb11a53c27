package torture_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redlock-go/redlock/torture"
	"github.com/redlock-go/redlock/torture/history"
	"github.com/redlock-go/redlock/torture/scenario"
	"github.com/redlock-go/redlock/torture/traffic"
)

func TestMain(m *testing.M) {
	traffic.RunIfWorker()
	os.Exit(m.Run())
}

// TestShortTable runs the short table (scenario.Short): a few seconds per
// scenario, one or more of each kind. TORTURE_SCENARIO=<regexp> runs the
// matching scenarios of the full table instead, and TORTURE_KEEP=<dir>
// keeps their histories.
func TestShortTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 15 s; skipped with -short")
	}
	table := scenario.Short()
	if pattern := os.Getenv("TORTURE_SCENARIO"); pattern != "" {
		var err error
		if table, err = scenario.Select(scenario.Table(), pattern); err != nil {
			t.Fatal(err)
		}
	}
	for _, sc := range table {
		t.Run(torture.FileName(sc.Name), func(t *testing.T) {
			out := runUntilCaught(t, sc)
			if out.Verdict != torture.Pass {
				t.Errorf("%s: verdict %s (expected %s, %d judged violations, %d liveness violations): %v",
					sc.Name, out.Verdict, sc.Expect, out.Judged, out.Starved, out.Err)
			}
		})
	}
}

// caughtTries bounds how many runs a row that must catch a violation
// makes before it fails (see torture.RunUntilCaught): on a loaded machine
// under -race restart-empty once saw 14 grants in 5 s and no restart
// inside a critical section.
const caughtTries = 8

// runUntilCaught runs sc (see torture.RunUntilCaught) and logs each run.
func runUntilCaught(t *testing.T, sc scenario.Scenario) *torture.Outcome {
	out := torture.RunUntilCaught(t.Context(), sc, torture.Options{Seed: 1, Dir: historyDir(t)}, caughtTries)
	if out.Runs > 1 {
		t.Logf("%s: caught nothing in %d runs before the last", sc.Name, out.Runs-1)
	}
	logOutcome(t, out)
	return out
}

// logOutcome logs what one run of a scenario saw.
func logOutcome(t *testing.T, out *torture.Outcome) {
	t.Helper()
	sc, r := out.Scenario, out.Result
	t.Logf("%s (seed %d): %d ops, %d attempts, %d grants, %d writes; violations %v; expect %s, judged %d; "+
		"longest wait %v (bound %v), %d of %d acquisitions served: %s (%v)",
		sc.Name, out.Seed, r.Ops, r.Attempts, r.Grants, r.Writes, r.Counts, sc.Expect, out.Judged,
		r.Waits.Longest, r.Bound.Wait, r.Waits.Served, r.Waits.Acquisitions, out.Verdict, out.Elapsed)
	for i, v := range r.Violations {
		if i < 5 {
			t.Logf("  %s: %s", v.Checker, v.Detail)
		}
	}
}

// historyDir returns where a test keeps histories: $TORTURE_KEEP if set, so
// that a failing run can be inspected, or a temporary directory.
func historyDir(t *testing.T) string {
	if dir := os.Getenv("TORTURE_KEEP"); dir != "" {
		return dir
	}
	return t.TempDir()
}

// A worker process slow to start (a loaded machine, a -race build) still
// gets the scenario's whole duration: Run begins the faults and the clock
// once every worker is ready. Its workers here start two seconds late, in
// a scenario of one second.
func TestRun_slowWorkersGetTheWholeDuration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for a few seconds; skipped with -short")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	slow := filepath.Join(t.TempDir(), "slow-worker")
	script := "#!/bin/sh\nsleep 2\nexec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(slow, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	table, err := scenario.Select(scenario.Table(), "^no-faults$")
	if err != nil {
		t.Fatal(err)
	}
	const duration = time.Second
	out := torture.Run(t.Context(), table[0], torture.Options{Seed: 1, Duration: duration, Executable: slow})
	logOutcome(t, out)
	if out.Verdict != torture.Pass {
		t.Fatalf("verdict %s: %v", out.Verdict, out.Err)
	}
	// Workers started after the run's end would each finish one cycle at
	// most: their acquisitions would begin within moments of each other.
	var first, last int64
	for _, ev := range out.Events {
		if ev.Type == history.Invoke && ev.Op == history.OpAcquire {
			if first == 0 {
				first = ev.Time
			}
			last = ev.Time
		}
	}
	if span := time.Duration(last - first); span < duration/2 {
		t.Fatalf("the workers' acquisitions began within %v, in a run of %v", span, duration)
	}
}

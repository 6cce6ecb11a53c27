package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/report"
	"github.com/redlock-go/redlock/bench/internal/slowproxy"
)

func TestMain(m *testing.M) {
	slowproxy.RunIfChild() // the slow-node proxy runs as a copy of the test binary
	os.Exit(m.Run())
}

// maxErrorShare bounds the failed cycles the smoke test accepts, as one in
// this many completed: under full load on a small machine a library's
// per-node timeouts can expire now and then, which the report shows, but a
// path that mostly fails is broken.
const maxErrorShare = 10

// TestRun_everyCaseAndLibrary runs every case with every library for a
// moment and checks that each one completed cycles without errors, or was
// marked not applicable for the reason expected, and that the output files
// were written.
func TestRun_everyCaseAndLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every case for half a second: about 20 s")
	}
	out := t.TempDir()
	readme := filepath.Join(out, "README.md")
	if err := os.WriteFile(readme, []byte("intro\n"+readmeBegin+"\nold\n"+readmeEnd+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	code := run(context.Background(), []string{"-duration", "250ms", "-warmup", "250ms", "-quiet", "-out", out, "-readme", readme}, new(strings.Builder), &stderr)
	if code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}

	var rep struct {
		report.Report
		Targets []report.Target `json:"targets"`
	}
	b, err := os.ReadFile(filepath.Join(out, "latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != len(cases()) {
		t.Errorf("%d cases in the report, want %d", len(rep.Cases), len(cases()))
	}
	if len(rep.Rows) != len(rep.Cases)*len(rep.Libraries) {
		t.Errorf("%d rows, want %d cases x %d libraries", len(rep.Rows), len(rep.Cases), len(rep.Libraries))
	}
	maxNodes := map[string]bool{"rueidislock": true, "bsm/redislock": true}
	for _, c := range rep.Cases {
		for _, l := range rep.Libraries {
			row, ok := rep.Lookup(c.ID, l.Name)
			switch {
			case !ok:
				t.Errorf("%s/%s: no row", c.ID, l.Name)
			case row.NA != "":
				if !(maxNodes[l.Name] && c.Nodes > 1) && !(l.Baseline && c.Handoffs) {
					t.Errorf("%s/%s: not run: %s", c.ID, l.Name, row.NA)
				}
			case row.Cycles == 0 || row.Errors*maxErrorShare > row.Cycles:
				t.Errorf("%s/%s: %d cycles, %d errors (last: %s)", c.ID, l.Name, row.Cycles, row.Errors, row.LastError)
			case row.P50Us <= 0 || row.P99Us < row.P50Us || row.AllocsPerCycle <= 0:
				t.Errorf("%s/%s: implausible numbers: %+v", c.ID, l.Name, row)
			}
		}
	}
	if len(rep.Targets) == 0 {
		t.Error("no targets evaluated")
	}
	for _, t2 := range rep.Targets {
		if t2.Status == report.NA {
			t.Errorf("target %q for %s could not be evaluated: %s", t2.Goal, t2.Library, t2.Value)
		}
		if t2.Goal == "allocations per cycle" && strings.Contains(t2.Value, drivers.BaselineName) {
			t.Errorf("the baseline, which is not a lock, was compared as a peer: %s", t2.Value)
		}
	}

	md, err := os.ReadFile(filepath.Join(out, "latest.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		if !strings.Contains(string(md), "`"+c.ID+"`") {
			t.Errorf("latest.md has no table for %s", c.ID)
		}
	}
	svg, err := os.ReadFile(filepath.Join(out, "latest.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), "redsync") {
		t.Errorf("latest.svg is not a chart: %.100s", svg)
	}
	got, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(got); strings.Contains(s, "\nold\n") || !strings.HasPrefix(s, "intro\n") ||
		!strings.HasSuffix(s, readmeEnd+"\nafter\n") || !strings.Contains(s, "](latest.svg)") {
		t.Errorf("README section not replaced as expected:\n%s", s)
	}
}

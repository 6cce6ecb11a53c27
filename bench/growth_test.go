package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/bench/internal/report"
)

// tinyGrowth is the growth plan of the smoke test: two points per curve,
// small ones.
var tinyGrowth = growthPlan{nodes: []int{1, 3}, workers: 4, goroutines: []int{1, 4}, waiters: []int{2, 3}, onNodes: 3}

// TestGrowth_tinyCurves runs every growth curve at two small points with
// every library, and checks that each library completed cycles at each
// point it can lock at, and that the charts, growth.md and the README
// section were written.
func TestGrowth_tinyCurves(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 38 rounds of 0.35 s")
	}
	out := t.TempDir()
	readme := filepath.Join(out, "README.md")
	if err := os.WriteFile(readme, []byte(growthReadmeBegin+"\nold\n"+growthReadmeEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Rounds long enough that a busy host's stall of a tenth of a second
	// does not leave a library's one goroutine without a cycle.
	cfg, err := parseFlags([]string{"-growth", "-duration", "250ms", "-warmup", "100ms", "-rounds", "1", "-quiet",
		"-out", out, "-readme", readme}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.growthPlan = tinyGrowth
	if _, err := execute(context.Background(), cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	readJSON(t, filepath.Join(out, "growth.json"), &rep)
	series, _ := tinyGrowth.series()
	if len(rep.Series) != len(series) {
		t.Fatalf("%d series, want %d", len(rep.Series), len(series))
	}
	for _, s := range rep.Series {
		if len(s.Points) != 2 {
			t.Errorf("%s: %d points, want 2", s.ID, len(s.Points))
		}
		for _, p := range s.Points {
			checkPoint(t, &rep, p.Case)
		}
		svg := readFile(t, filepath.Join(out, "growth-"+s.ID+".svg"))
		if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "<polyline") || !strings.Contains(svg, "redsync") {
			t.Errorf("growth-%s.svg is not a line chart: %.100s", s.ID, svg)
		}
	}
	if s := readFile(t, readme); strings.Contains(s, "\nold\n") || !strings.Contains(s, "](growth-waiters.svg)") {
		t.Errorf("README section not replaced as expected:\n%.500s", s)
	}
}

// readFile returns the content of the file at path.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readJSON decodes the file at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(readFile(t, path)), v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkPoint checks that every library ran the case at id and completed
// cycles, unless it cannot run there.
func checkPoint(t *testing.T, rep *report.Report, id string) {
	t.Helper()
	c, ok := rep.Case(id)
	if !ok {
		t.Errorf("no case %s", id)
		return
	}
	for _, l := range rep.Libraries {
		row, ok := rep.Lookup(id, l.Name)
		singleNode := l.Name == rueidislock || l.Name == "bsm/redislock"
		switch {
		case !ok:
			t.Errorf("%s/%s: no row", id, l.Name)
		case row.NA != "":
			if !(singleNode && c.Nodes > 1) && !(l.Baseline && c.Handoffs) && !(l.Floor && !floorRuns(c)) {
				t.Errorf("%s/%s: not run: %s", id, l.Name, row.NA)
			}
		case row.Cycles == 0 || row.Errors*maxErrorShare > row.Cycles || row.Timeouts > 0:
			t.Errorf("%s/%s: %d cycles, %d errors, %d timeouts (last: %s)", id, l.Name, row.Cycles, row.Errors, row.Timeouts, row.LastError)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/bench/internal/delayproxy"
	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/report"
)

func TestMain(m *testing.M) {
	delayproxy.RunIfChild() // the slow-node proxy runs as a copy of the test binary
	os.Exit(m.Run())
}

// smokeCrowd is the crowd of the smoke test: separate clients, enough to
// contend, few enough to open quickly.
const smokeCrowd = 4

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
	readme := writeSmokeReadme(t, out)
	var stderr strings.Builder
	code := run(context.Background(), []string{"-duration", "250ms", "-warmup", "250ms", "-crowd", strconv.Itoa(smokeCrowd), "-quiet",
		"-out", out, "-readme", readme}, new(strings.Builder), &stderr)
	if code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}

	rep := readSmokeReport(t, out)
	checkRows(t, &rep.Report)
	checkTargets(t, rep.Targets)

	md := readOutput(t, out, "latest.md")
	checkCaseTables(t, &rep.Report, md)
	checkNetworkAndCrowd(t, &rep.Report, md)
	checkLockKinds(t, &rep.Report, rep.Targets, md)
	if svg := readOutput(t, out, "latest.svg"); !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "redsync") {
		t.Errorf("latest.svg is not a chart: %.100s", svg)
	}
	checkReadme(t, readme)
}

// smokeReport is latest.json as the smoke test reads it: the report and the
// targets evaluated on it.
type smokeReport struct {
	report.Report
	Targets []report.Target `json:"targets"`
}

// writeSmokeReadme writes a README into out with an old benchmark section
// between other text, for the run to replace, and returns its path.
func writeSmokeReadme(t *testing.T, out string) string {
	t.Helper()
	readme := filepath.Join(out, "README.md")
	if err := os.WriteFile(readme, []byte("intro\n"+readmeBegin+"\nold\n"+readmeEnd+"\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return readme
}

// readOutput returns the content of the file name the run wrote into out.
func readOutput(t *testing.T, out, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readSmokeReport decodes latest.json from out.
func readSmokeReport(t *testing.T, out string) smokeReport {
	t.Helper()
	var rep smokeReport
	if err := json.Unmarshal([]byte(readOutput(t, out, "latest.json")), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// checkRows checks that the report has every case, a row for every case and
// library, and that each row completed cycles with few errors and plausible
// numbers, or was not run for the reason expected.
func checkRows(t *testing.T, rep *report.Report) {
	t.Helper()
	if want := len(cases(sizes{crowd: smokeCrowd})); len(rep.Cases) != want {
		t.Errorf("%d cases in the report, want %d", len(rep.Cases), want)
	}
	if len(rep.Rows) != len(rep.Cases)*len(rep.Libraries) {
		t.Errorf("%d rows, want %d cases x %d libraries", len(rep.Rows), len(rep.Cases), len(rep.Libraries))
	}
	for _, c := range rep.Cases {
		for _, l := range rep.Libraries {
			checkRow(t, rep, c, l)
		}
	}
}

// checkRow checks the row of case c and library l: it ran with cycles, few
// errors and plausible numbers, or was marked not applicable because l
// locks one node only and c has several, l is the baseline and c hands
// the lock between clients, or l is the fenced floor and c is not one
// goroutine taking a plain lock.
func checkRow(t *testing.T, rep *report.Report, c report.Case, l report.Library) {
	t.Helper()
	maxNodes := map[string]bool{"rueidislock": true, "bsm/redislock": true}
	row, ok := rep.Lookup(c.ID, l.Name)
	switch {
	case !ok:
		t.Errorf("%s/%s: no row", c.ID, l.Name)
	case row.NA != "":
		if !(maxNodes[l.Name] && c.Nodes > 1) && !(l.Baseline && c.Handoffs) && !(l.Floor && !floorRuns(c)) {
			t.Errorf("%s/%s: not run: %s", c.ID, l.Name, row.NA)
		}
	case row.Cycles == 0 || row.Errors*maxErrorShare > row.Cycles:
		t.Errorf("%s/%s: %d cycles, %d errors (last: %s)", c.ID, l.Name, row.Cycles, row.Errors, row.LastError)
	case row.P50Us <= 0 || row.P99Us < row.P50Us || row.AllocsPerCycle <= 0:
		t.Errorf("%s/%s: implausible numbers: %+v", c.ID, l.Name, row)
	}
}

// checkTargets checks that targets were evaluated, each one could be, and
// the baseline was never compared as a peer.
func checkTargets(t *testing.T, targets []report.Target) {
	t.Helper()
	if len(targets) == 0 {
		t.Error("no targets evaluated")
	}
	for _, t2 := range targets {
		// A quarter-second case may end before a server's CPU time, read
		// at a 10 ms resolution, moves: the report says so, and the run is
		// otherwise checked.
		if t2.Status == report.NA && !strings.HasPrefix(t2.Value, report.Unmeasured) {
			t.Errorf("target %q for %s could not be evaluated: %s", t2.Goal, t2.Library, t2.Value)
		}
		if t2.Goal == "allocations per cycle" && strings.Contains(t2.Value, drivers.BaselineName) {
			t.Errorf("the baseline, which is not a lock, was compared as a peer: %s", t2.Value)
		}
	}
}

// checkCaseTables checks that latest.md has a table for every case.
func checkCaseTables(t *testing.T, rep *report.Report, md string) {
	t.Helper()
	for _, c := range rep.Cases {
		if !strings.Contains(md, "`"+c.ID+"`") {
			t.Errorf("latest.md has no table for %s", c.ID)
		}
	}
}

// checkReadme checks that the run replaced the benchmark section of the
// README at readme, kept the text around it and linked the chart.
func checkReadme(t *testing.T, readme string) {
	t.Helper()
	got, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(got); strings.Contains(s, "\nold\n") || !strings.HasPrefix(s, "intro\n") ||
		!strings.HasSuffix(s, readmeEnd+"\nafter\n") || !strings.Contains(s, "](latest.svg)") {
		t.Errorf("README section not replaced as expected:\n%s", s)
	}
}

// checkNetworkAndCrowd checks the network cases' floors and the crowd
// cases' clients (the try-loop cases' among them) in the report, and that
// latest.md has their sections.
func checkNetworkAndCrowd(t *testing.T, rep *report.Report, md string) {
	t.Helper()
	lan, crowd, try := 0, 0, 0
	for _, c := range rep.Cases {
		if c.DelayUs > 0 {
			lan++
		}
		if c.Try {
			try++
		}
		if c.Clients > 0 && c.Mutex() {
			crowd++
			if c.Clients != smokeCrowd || c.Workers != smokeCrowd || !c.Handoffs {
				t.Errorf("%s: %d clients, %d goroutines, handoffs %v; want %d, %d, true", c.ID, c.Clients, c.Workers, c.Handoffs, smokeCrowd, smokeCrowd)
			}
		}
		checkFloors(t, rep, c)
	}
	if lan != 2 || crowd != 4 || try != 2 {
		t.Errorf("%d network, %d crowd and %d try-loop cases, want 2, 4 and 2", lan, crowd, try)
	}
	for _, section := range []string{"### Over a network", "### Separate clients on one shared key", "In `tryloop-*` each client"} {
		if !strings.Contains(md, section) {
			t.Errorf("latest.md has no %q section", section)
		}
	}
}

// checkFloors checks that the rows of c have a floor over a network, of at
// least its four delays as measured, and none on loopback.
func checkFloors(t *testing.T, rep *report.Report, c report.Case) {
	t.Helper()
	for _, row := range rep.Rows {
		if row.Case != c.ID || row.NA != "" {
			continue
		}
		if c.DelayUs > 0 && (c.MeasuredDelayUs <= 0 || row.FloorUs < 4*c.MeasuredDelayUs) || c.DelayUs == 0 && row.FloorUs != 0 {
			t.Errorf("%s/%s: floor %v µs with a delay of %v µs each way (measured %v µs)", c.ID, row.Library, row.FloorUs, c.DelayUs, c.MeasuredDelayUs)
		}
	}
}

// checkLockKinds checks the semaphore and read-write cases: both are in the
// report on one and five nodes, every library says how it ran them, a
// read-write row splits its cycles between readers and writers, the
// targets of plain locks leave them out, and latest.md has their section.
func checkLockKinds(t *testing.T, rep *report.Report, targets []report.Target, md string) {
	t.Helper()
	var ids []string
	for _, c := range rep.Cases {
		if !c.Mutex() {
			ids = append(ids, c.ID)
		}
		if c.WriteEvery > 0 {
			checkReadersWriters(t, rep, c.ID)
		}
	}
	if want := []string{"semaphore-1", "semaphore-5", "semclients-1", "rwlock-1", "rwlock-5"}; strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("semaphore and read-write cases %v, want %v", ids, want)
	}
	for _, l := range rep.Libraries {
		if !l.Baseline && !l.Floor && (l.Semaphore == "" || l.ReadWrite == "") {
			t.Errorf("%s: does not say how it takes a semaphore (%q) or a read-write lock (%q)", l.Name, l.Semaphore, l.ReadWrite)
		}
	}
	for _, tg := range targets {
		if tg.Goal == "ahead of every peer" && (strings.Contains(tg.Value, "semaphore-") || strings.Contains(tg.Value, "rwlock-")) {
			t.Errorf("a peer's substitute was compared as a lock of the same kind: %s", tg.Value)
		}
	}
	if !strings.Contains(md, "### Semaphores and read-write locks") || !strings.Contains(md, drivers.HandMadeSemaphore) {
		t.Error("latest.md has no semaphore and read-write section naming the peers' substitute")
	}
}

// checkReadersWriters checks that every row of the read-write case id that
// ran has readers' and writers' cycles adding up to its own.
func checkReadersWriters(t *testing.T, rep *report.Report, id string) {
	t.Helper()
	for _, row := range rep.Rows {
		if row.Case != id || row.NA != "" {
			continue
		}
		if row.Readers == nil || row.Writers == nil || row.Readers.Cycles == 0 || row.Writers.Cycles == 0 ||
			row.Readers.Cycles+row.Writers.Cycles != row.Cycles {
			t.Errorf("%s/%s: readers %+v and writers %+v of %d cycles", id, row.Library, row.Readers, row.Writers, row.Cycles)
		}
	}
}

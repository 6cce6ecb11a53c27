package report_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/torture"
	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
	"github.com/redlock-go/redlock/torture/report"
	"github.com/redlock-go/redlock/torture/scenario"
	"github.com/redlock-go/redlock/torture/traffic"
)

const ms = int64(time.Millisecond)

// outcome returns a checked outcome of a hand-made history in which
// worker-1 is granted the lock while worker-0 holds it, during a fault.
func outcome(mode traffic.Mode, expect scenario.Expect) *torture.Outcome {
	ev := func(t int64, proc string, typ history.Type, op string, id int64, f func(*history.Event)) history.Event {
		e := history.Event{Time: t, Process: proc, Type: typ, Op: op, ID: id}
		if f != nil {
			f(&e)
		}
		return e
	}
	grant := func(tok string, fence uint64) func(*history.Event) {
		return func(e *history.Event) { e.Token, e.Fence, e.Deadline = tok, fence, 400*ms }
	}
	events := []history.Event{
		ev(0, history.ProcNemesis, history.Start, "pause-node", 1, func(e *history.Event) { e.Target = "n1" }),
		ev(1*ms, "worker-0", history.Invoke, history.OpAcquire, 1, nil),
		ev(2*ms, "worker-0", history.OK, history.OpAcquire, 1, grant("a", 1)),
		ev(5*ms, "worker-1", history.Invoke, history.OpAcquire, 1, nil),
		ev(6*ms, "worker-1", history.OK, history.OpAcquire, 1, grant("b", 2)),
		ev(8*ms, "worker-0", history.Invoke, history.OpRelease, 2, func(e *history.Event) { e.Token = "a" }),
		ev(9*ms, "worker-0", history.OK, history.OpRelease, 2, nil),
		ev(10*ms, history.ProcNemesis, history.End, "pause-node", 1, func(e *history.Event) { e.Target = "n1" }),
		ev(12*ms, "worker-1", history.Invoke, history.OpRelease, 2, func(e *history.Event) { e.Token = "b" }),
		ev(13*ms, "worker-1", history.OK, history.OpRelease, 2, nil),
	}
	sc := scenario.Scenario{Name: "two-holders", About: "made by hand", Expect: expect, Register: mode}.WithDefaults()
	o := &torture.Outcome{Scenario: sc, Events: events, Start: 0, End: 20 * ms, Result: check.Check(events, 0, check.Bound{})}
	o.Judged = o.Result.Total(sc.Judged())
	o.Verdict = torture.Pass
	if (expect == scenario.Hold) != (o.Judged == 0) {
		o.Verdict = torture.Fail
	}
	return o
}

func TestTable_marksUnjudgedCounts(t *testing.T) {
	var b bytes.Buffer
	outs := []*torture.Outcome{outcome(traffic.Unfenced, scenario.Caught), outcome(traffic.Fenced, scenario.Hold)}
	if err := report.Table(&b, outs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("table has %d lines, want 3:\n%s", len(lines), b.String())
	}
	// Unfenced: the lock checkers count; no fence order violation.
	// No bound on waiting stated: measured, not judged.
	if f := strings.Fields(lines[1]); strings.Join(f[4:], " ") != "1 1 - 0 0 - - 1ms none 100% - caught PASS" {
		t.Fatalf("unfenced row %q", lines[1])
	}
	// Fenced: the lock checkers are reported in parentheses.
	if f := strings.Fields(lines[2]); strings.Join(f[4:], " ") != "(1) (1) - 0 0 - - 1ms none 100% - hold PASS" {
		t.Fatalf("fenced row %q", lines[2])
	}
	b.Reset()
	if err := report.Markdown(&b, outs); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "| scenario | register | ops | grants | linearizable | overlap | over-limit | lost-update | fence-order | observed | "+
		"liveness | wait | bound | served | least | expected | verdict |\n"+
		"|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|\n") ||
		!strings.Contains(b.String(), "| two-holders | fenced | 4 | 2 | (1) | (1) | - | 0 | 0 | - | - | 1ms | none | 100% | - | hold | PASS |") {
		t.Fatalf("markdown:\n%s", b.String())
	}
}

func TestWriteHTML_drawsTimelineWithViolations(t *testing.T) {
	dir := t.TempDir()
	o := outcome(traffic.Unfenced, scenario.Hold) // a mismatch: FAIL
	path, err := report.WriteHTML(dir, report.Run{Command: "go run ./cmd/torture -seed 1", Seed: 1, Started: time.Now()}, []*torture.Outcome{o})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<a href="#two-holders">two-holders</a>`,
		`class="FAIL"`,
		"1 did not match their expectation",
		"<svg",                                       // the timeline
		"Close-up of the first violation, at 0.001s", // the zoom
		`fill="#d62728"`,                             // a violation mark
		"pause-node n1",                              // the fault's tooltip
		"worker-1 was granted the lock at +0.006s",
		"go run ./cmd/torture -seed 1",
		"Liveness: no bound stated.",
		"<th>liveness</th><th>wait</th><th>bound</th><th>served</th><th>least</th>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<svg"); n != 2 {
		t.Errorf("page has %d timelines, want 2 (full and close-up)", n)
	}
}

// starved returns a checked outcome of a hand-made history in which
// worker-1 waits 2 s in Acquire while worker-0 holds the lock and takes it
// again, held to a bound of 500 ms.
func starved() *torture.Outcome {
	var events []history.Event
	add := func(t int64, proc string, typ history.Type, op string, id int64, tok string) {
		events = append(events, history.Event{Time: t, Process: proc, Type: typ, Op: op, ID: id, Token: tok, Deadline: t + 500*ms})
	}
	add(0, "worker-1", history.Invoke, history.OpAcquire, 1, "")
	for i := range int64(10) {
		t, tok := i*200*ms, string(rune('a'+i))
		add(t+1*ms, "worker-0", history.Invoke, history.OpAcquire, 2*i+1, "")
		add(t+2*ms, "worker-0", history.OK, history.OpAcquire, 2*i+1, tok)
		add(t+150*ms, "worker-0", history.Invoke, history.OpRelease, 2*i+2, tok)
		add(t+151*ms, "worker-0", history.OK, history.OpRelease, 2*i+2, tok)
	}
	add(2000*ms, "worker-1", history.Fail, history.OpAcquire, 1, "")
	sc := scenario.Scenario{Name: "starved", About: "made by hand", Wait: true}.WithDefaults()
	bound := check.Bound{Wait: 500 * time.Millisecond, MinServed: 1, Derivation: "made by hand"}
	o := &torture.Outcome{Scenario: sc, Events: events, Start: 0, End: 2100 * ms, Result: check.Check(events, 0, bound)}
	o.Starved = o.Result.Count(check.Liveness)
	o.Verdict = torture.Fail
	return o
}

// A wait past the bound is counted, shown beside the bound, and told
// below the table: which waiter, how long, the bound.
func TestTable_showsLiveness(t *testing.T) {
	var b bytes.Buffer
	if err := report.Table(&b, []*torture.Outcome{starved()}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if f := strings.Fields(lines[1]); strings.Join(f[10:], " ") != "2 2.00s 500ms 90.9% 100% hold FAIL" {
		t.Fatalf("row %q", lines[1])
	}
	for _, want := range []string{
		"starved: liveness: worker-1 waited 2.00 s for  from +0.000s until it gave up at +2.000s: past the bound of 500 ms",
		"starved: liveness: 10 of 11 acquisitions served (90.9%), below the least share of 100%",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if got := report.LivenessSummary(starved()); !strings.Contains(got, "bound 500ms, at least 100% served (made by hand). Longest wait 2.00s, by worker-1; 10 of 11 acquisitions served (90.9%)") {
		t.Errorf("summary %q", got)
	}
}

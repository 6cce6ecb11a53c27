// Package report presents the outcomes of a torture run: a table for the
// terminal, and an HTML page with a timeline per scenario (who held the
// lock when, the faults shaded, the violations marked) that can be read at
// a glance.
package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redlock-go/redlock/torture"
	"github.com/redlock-go/redlock/torture/check"
)

// Table writes one line per outcome: scenario, register mode, operations,
// grants, the violations of each checker, the liveness columns (see
// LivenessCells), the expectation and the verdict. Counts of checkers that
// do not decide the scenario's verdict are in parentheses; "-" marks a
// checker with nothing to check. Below the table it says why each
// scenario that could not run did not, and what each liveness violation
// was, a few per scenario.
func Table(w io.Writer, outs []*torture.Outcome) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header(), "\t")+"\t")
	for _, o := range outs {
		fmt.Fprintln(tw, strings.Join(row(o), "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range outs {
		if o.Err != nil {
			fmt.Fprintf(w, "%s: %s: %v\n", o.Scenario.Name, o.Verdict, o.Err)
		}
	}
	for _, o := range outs {
		for _, d := range LivenessDetails(o, listedStarved) {
			fmt.Fprintf(w, "%s: %s\n", o.Scenario.Name, d)
		}
	}
	return nil
}

// listedStarved is how many liveness violations Table lists per scenario.
const listedStarved = 3

// Markdown writes the same table as Markdown, for the README.
func Markdown(w io.Writer, outs []*torture.Outcome) error {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header(), " | ") + " |\n")
	b.WriteString("|---|---|--:|--:|" + strings.Repeat("--:|", len(check.Kinds)+len(livenessHeader)) + "---|---|\n")
	for _, o := range outs {
		b.WriteString("| " + strings.Join(row(o), " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// livenessHeader names the liveness columns (see LivenessCells).
var livenessHeader = []string{"liveness", "wait", "bound", "served", "least"}

// header returns the table's column names: one per checker of safety and
// the liveness columns between the counts and the verdict.
func header() []string {
	h := []string{"scenario", "register", "ops", "grants"}
	for _, k := range check.Kinds {
		h = append(h, k.String())
	}
	h = append(h, livenessHeader...)
	return append(h, "expected", "verdict")
}

// row returns o's cells, in the order of header.
func row(o *torture.Outcome) []string {
	r := []string{o.Scenario.Name, o.Scenario.Register.String(), strconv.Itoa(o.Result.Ops), strconv.Itoa(o.Result.Grants)}
	for _, k := range check.Kinds {
		r = append(r, Cell(o, k))
	}
	r = append(r, LivenessCells(o)...)
	return append(r, o.Scenario.Expect.String(), verdict(o))
}

// verdict renders o's verdict, with the number of runs and the last one's
// seed when torture.RunUntilCaught made more than one: "PASS (run 2,
// seed 2)".
func verdict(o *torture.Outcome) string {
	if o.Runs > 1 {
		return fmt.Sprintf("%s (run %d, seed %d)", o.Verdict, o.Runs, o.Seed)
	}
	return string(o.Verdict)
}

// Cell renders checker k's count for o: the number, in parentheses when k
// does not decide o's verdict, "-" when k had nothing to check.
func Cell(o *torture.Outcome, k check.Kind) string {
	if !o.Result.Applicable[k] {
		return "-"
	}
	s := strconv.Itoa(o.Result.Count(k))
	if !judged(o, k) {
		return "(" + s + ")"
	}
	return s
}

// judged reports whether checker k decides o's verdict: the liveness
// checker always does when it applies.
func judged(o *torture.Outcome, k check.Kind) bool {
	if k == check.Liveness {
		return true
	}
	for _, j := range o.Scenario.Judged() {
		if j == k {
			return true
		}
	}
	return false
}

// LivenessCells renders what the liveness checker found for o: the number
// of its violations ("-" when the scenario states no bound), the longest
// wait, the bound ("free" when it bounds how long the lock stays free
// while workers loop TryAcquire, "+d" when a waiter that some faults touch
// may wait d more, "*" when it holds outside faults only, "none" when
// there is none), the share of acquisitions served and the
// least share the scenario asks ("-" for none).
func LivenessCells(o *torture.Outcome) []string {
	r := o.Result
	b := r.Bound
	bound, least := "none", "-"
	if b.Wait > 0 {
		bound = duration(b.Wait)
		if b.Loops {
			bound += " free"
		}
		if c := b.MostCost(); c > 0 {
			bound += "+" + duration(c)
		}
		if b.FaultFree {
			bound += "*"
		}
	}
	if b.MinServed > 0 {
		least = percent(b.MinServed)
	}
	wait, served := duration(r.Waits.Longest), percent(r.Waits.Share())
	if r.Waits.Measured == 0 {
		wait = "-"
	}
	if r.Waits.Acquisitions == 0 {
		served = "-"
	}
	return []string{Cell(o, check.Liveness), wait, bound, served, least}
}

// LivenessDetails returns the details of up to n of o's liveness
// violations, and how many more there were.
func LivenessDetails(o *torture.Outcome, n int) []string {
	var out []string
	total := 0
	for _, v := range o.Result.Violations {
		if v.Checker != check.Liveness {
			continue
		}
		if total++; total <= n {
			out = append(out, "liveness: "+v.Detail)
		}
	}
	if total > n {
		out = append(out, fmt.Sprintf("liveness: … and %d more", total-n))
	}
	return out
}

// LivenessSummary says in a sentence what bound o's scenario states on
// waiting and how it is derived, and what the liveness checker measured.
func LivenessSummary(o *torture.Outcome) string {
	b, w := o.Result.Bound, o.Result.Waits
	if !b.Stated() {
		if b.Derivation == "" {
			return "Liveness: no bound stated."
		}
		return "Liveness: no bound stated: " + b.Derivation + "."
	}
	var s strings.Builder
	fmt.Fprintf(&s, "Liveness: bound %s", LivenessCells(o)[2])
	if b.MinServed > 0 {
		fmt.Fprintf(&s, ", at least %s served", percent(b.MinServed))
	}
	fmt.Fprintf(&s, " (%s).", b.Derivation)
	if w.Measured == 0 {
		fmt.Fprintf(&s, " Nothing measured: faults touched every one of %d acquisitions.", w.Outside)
		return s.String()
	}
	fmt.Fprintf(&s, " Longest wait %s", duration(w.Longest))
	if w.Waiter != "" {
		fmt.Fprintf(&s, ", by %s", w.Waiter)
	}
	fmt.Fprintf(&s, "; %d of %d acquisitions served (%s)", w.Served, w.Acquisitions, percent(w.Share()))
	switch {
	case w.Outside > 0 && b.Loops:
		fmt.Fprintf(&s, "; %d touched by a fault, held to the bound outside it, left out of the share", w.Outside)
	case w.Outside > 0:
		fmt.Fprintf(&s, "; %d touched by a fault and left out", w.Outside)
	}
	s.WriteString(".")
	return s.String()
}

// duration renders d in milliseconds, or in seconds from a second on.
func duration(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// percent renders a share as a percentage, with one decimal below 100.
func percent(share float64) string {
	if share >= 1 {
		return "100%"
	}
	return fmt.Sprintf("%.1f%%", math.Floor(1000*share)/10)
}

// Package report presents the outcomes of a torture run: a table for the
// terminal, and an HTML page with a timeline per scenario (who held the
// lock when, the faults shaded, the violations marked) that can be read at
// a glance.
package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/redlock-go/redlock/torture"
	"github.com/redlock-go/redlock/torture/check"
)

// Table writes one line per outcome: scenario, register mode, operations,
// grants, the violations of each checker, the expectation and the verdict.
// Counts of checkers that do not decide the scenario's verdict are in
// parentheses; "-" marks a checker with nothing to check.
func Table(w io.Writer, outs []*torture.Outcome) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tregister\tops\tgrants\tlinearizable\toverlap\tlost-update\tfence-order\texpected\tverdict\t")
	for _, o := range outs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			o.Scenario.Name, o.Scenario.Register, o.Result.Ops, o.Result.Grants,
			Cell(o, check.Linearizable), Cell(o, check.Overlap), Cell(o, check.LostUpdate), Cell(o, check.FenceOrder),
			o.Scenario.Expect, o.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range outs {
		if o.Err != nil {
			fmt.Fprintf(w, "%s: %s: %v\n", o.Scenario.Name, o.Verdict, o.Err)
		}
	}
	return nil
}

// Markdown writes the same table as Markdown, for the README.
func Markdown(w io.Writer, outs []*torture.Outcome) error {
	var b strings.Builder
	b.WriteString("| scenario | register | ops | grants | linearizable | overlap | lost-update | fence-order | expected | verdict |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|---|---|\n")
	for _, o := range outs {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n",
			o.Scenario.Name, o.Scenario.Register, o.Result.Ops, o.Result.Grants,
			Cell(o, check.Linearizable), Cell(o, check.Overlap), Cell(o, check.LostUpdate), Cell(o, check.FenceOrder),
			o.Scenario.Expect, o.Verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
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

// judged reports whether checker k decides o's verdict.
func judged(o *torture.Outcome, k check.Kind) bool {
	for _, j := range o.Scenario.Judged() {
		if j == k {
			return true
		}
	}
	return false
}

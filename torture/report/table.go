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
	return nil
}

// Markdown writes the same table as Markdown, for the README.
func Markdown(w io.Writer, outs []*torture.Outcome) error {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header(), " | ") + " |\n")
	b.WriteString("|---|---|--:|--:|" + strings.Repeat("--:|", len(check.Kinds)) + "---|---|\n")
	for _, o := range outs {
		b.WriteString("| " + strings.Join(row(o), " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// header returns the table's column names: one per checker between the
// counts and the verdict.
func header() []string {
	h := []string{"scenario", "register", "ops", "grants"}
	for _, k := range check.Kinds {
		h = append(h, k.String())
	}
	return append(h, "expected", "verdict")
}

// row returns o's cells, in the order of header.
func row(o *torture.Outcome) []string {
	r := []string{o.Scenario.Name, o.Scenario.Register.String(), strconv.Itoa(o.Result.Ops), strconv.Itoa(o.Result.Grants)}
	for _, k := range check.Kinds {
		r = append(r, Cell(o, k))
	}
	return append(r, o.Scenario.Expect.String(), string(o.Verdict))
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

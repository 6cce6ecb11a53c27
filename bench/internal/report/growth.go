package report

import (
	"fmt"
	"io"
	"strings"
)

// Series is one growth curve: cases of a run that differ in one dimension
// (nodes, goroutines, waiters), in the order of X.
type Series struct {
	ID     string  `json:"id"`
	Title  string  `json:"title"`
	XLabel string  `json:"x_label"`
	Points []Point `json:"points"`
}

// Point is one case of a series and its place on the x axis.
type Point struct {
	X    float64 `json:"x"`
	Case string  `json:"case"`
}

// Costs a growth curve shows per cycle (per handoff on a shared key).
var (
	// TimeMetric is the wall time per cycle, the inverse of the rate: with
	// many goroutines, what a cycle costs of the run's time.
	TimeMetric = Metric{"time per cycle", "µs", func(r Row) float64 {
		if r.Rate == 0 {
			return 0
		}
		return 1e6 / r.Rate
	}}
	// CPUMetric is the CPU per cycle of the client process and the servers
	// together.
	CPUMetric = Metric{"CPU per cycle, client + Redis", "µs", func(r Row) float64 {
		return r.CPUUsPerCycle + r.ServerCPUUsPerCycle
	}}
)

// WriteGrowthMarkdown writes the run's facts and, per series, its chart
// (charts maps a series id to the chart's path relative to the markdown
// file) and the numbers behind it.
func (r *Report) WriteGrowthMarkdown(w io.Writer, charts map[string]string) error {
	var b strings.Builder
	r.writeHeader(&b)
	for _, s := range r.Series {
		fmt.Fprintf(&b, "### %s\n\n", s.Title)
		if path := charts[s.ID]; path != "" {
			fmt.Fprintf(&b, "![%s](%s)\n\n", s.Title, path)
		}
		for _, m := range []Metric{TimeMetric, CPUMetric} {
			fmt.Fprintf(&b, "%s, µs:\n\n", strings.ToUpper(m.Name[:1])+m.Name[1:])
			r.writeLibraryHeader(&b, s.XLabel)
			for _, p := range s.Points {
				fmt.Fprintf(&b, "| %g |", p.X)
				for _, l := range r.Libraries {
					fmt.Fprintf(&b, " %s |", r.cell(p.Case, l.Name, func(row Row) string { return costCell(row, m) }))
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		r.writeSeriesTrouble(&b, s)
	}
	r.writeSettings(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// costCell formats m of row, or says why there is none.
func costCell(row Row, m Metric) string {
	if row.Cycles == 0 {
		return "no cycle"
	}
	return Num(m.Get(row))
}

// writeSeriesTrouble lists the points of s where a library failed cycles
// or ran out of time acquiring.
func (r *Report) writeSeriesTrouble(b *strings.Builder, s Series) {
	for _, p := range s.Points {
		for _, l := range r.Libraries {
			row, ok := r.Row(p.Case, l.Name)
			if !ok || row.Errors+row.Timeouts == 0 {
				continue
			}
			fmt.Fprintf(b, "- %s at %s %g: %d errors, %d timed out", l.Name, s.XLabel, p.X, row.Errors, row.Timeouts)
			if row.LastError != "" {
				fmt.Fprintf(b, " (last: %s)", clip(row.LastError, 80))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

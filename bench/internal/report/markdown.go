package report

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the summary: run facts, a rate overview, the targets,
// one table per case, and each library's settings. chart, if not empty, is
// the chart's path relative to the markdown file.
func (r *Report) WriteMarkdown(w io.Writer, targets []Target, chart string) error {
	var b strings.Builder
	m := r.Meta
	fmt.Fprintf(&b, "Run %s", m.Date.UTC().Format("2006-01-02 15:04 MST"))
	if m.Commit != "" {
		fmt.Fprintf(&b, " at commit %s", m.Commit)
	}
	fmt.Fprintf(&b, " with `%s`.\n", m.Command)
	fmt.Fprintf(&b, "%s, %s, GOMAXPROCS %d", m.GoVersion, m.Platform, m.GOMAXPROCS)
	if m.CPUModel != "" {
		fmt.Fprintf(&b, ", %s", m.CPUModel)
	}
	fmt.Fprintf(&b, "; redis-server %s on loopback, PING round trip %s µs at the start (median).\n", m.RedisVersion, Num(m.RoundTripUs))
	fmt.Fprintf(&b, "Each library, in each case: %gs measured after a %gs warm-up, in %d rounds that take the libraries in turn "+
		"(a shorter warm-up before each later round). The slow node is behind a proxy adding %g ms to every reply.\n",
		m.DurationSec, m.WarmupSec, max(m.Rounds, 1), m.SlowLatencyMs)
	if m.MarkedReady {
		b.WriteString("The nodes were new and empty: redlock's restart quarantine was lifted once with Client.MarkReady before the first case.\n")
	}
	b.WriteString("\n")

	if chart != "" {
		fmt.Fprintf(&b, "![cycles per second by case and library](%s)\n\n", chart)
	}

	b.WriteString("### Cycles per second (handoffs per second for one shared key)\n\n")
	b.WriteString("| case |")
	for _, l := range r.Libraries {
		fmt.Fprintf(&b, " %s |", l.Name)
	}
	b.WriteString("\n|---|")
	for range r.Libraries {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "| %s |", c.Title)
		for _, l := range r.Libraries {
			fmt.Fprintf(&b, " %s |", r.cell(c.ID, l.Name, func(row Row) string { return Num(row.Rate) }))
		}
		b.WriteString("\n")
	}

	if len(targets) > 0 {
		b.WriteString("\n### Targets (ratios within this run)\n\n")
		b.WriteString("| goal | case | library | measured | needed | |\n|---|---|---|---|---|---|\n")
		for _, t := range targets {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", t.Goal, t.Case, t.Library, t.Value, t.Need, t.Status)
		}
	}

	b.WriteString("\n### Details per case\n\n")
	b.WriteString("Latency is of a whole cycle (acquire + release), or for one shared key of the wait in " +
		"acquire. Allocations and CPU are the whole benchmark process's in the measured window divided " +
		"by cycles: the library's background goroutines count, and so does the one string the harness " +
		"allocates per cycle for a new key. Redis CPU is the servers' user+system time per cycle (10 ms " +
		"resolution); new connections are those the servers accepted in the window, per thousand cycles.\n")
	for _, c := range r.Cases {
		rate, lat := "cycles/s", "cycle"
		if c.Handoffs {
			rate, lat = "handoffs/s", "wait"
		}
		fmt.Fprintf(&b, "\n#### %s (`%s`)\n\n", c.Title, c.ID)
		if c.RoundTripUs > 0 {
			fmt.Fprintf(&b, "PING round trip during this case: %s µs (median of samples before each round).\n\n", Num(c.RoundTripUs))
		}
		fmt.Fprintf(&b, "| library | %s | p50 %s | p90 | p99 | max | allocs/cycle | B/cycle | CPU/cycle | Redis CPU/cycle | new conns/1k cycles | errors |\n", rate, lat)
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, l := range r.Libraries {
			row, found := r.Lookup(c.ID, l.Name)
			if !found {
				continue
			}
			if row.NA != "" {
				fmt.Fprintf(&b, "| %s | n/a: %s | | | | | | | | | | |\n", l.Name, row.NA)
				continue
			}
			errs := fmt.Sprint(row.Errors)
			if row.LastError != "" {
				errs += fmt.Sprintf(" (last: %s)", strings.ReplaceAll(clip(row.LastError, 80), "|", "/"))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s µs | %s µs | %s | %s |\n",
				l.Name, Num(row.Rate), Dur(row.P50Us), Dur(row.P90Us), Dur(row.P99Us), Dur(row.MaxUs),
				Num(row.AllocsPerCycle), Num(row.BytesPerCycle), Num(row.CPUUsPerCycle), Num(row.ServerCPUUsPerCycle),
				Num(row.NewConnsPer1kCycles), errs)
		}
		for _, l := range r.Libraries {
			if row, ok := r.Lookup(c.ID, l.Name); ok && row.ClientLogs > 0 {
				fmt.Fprintf(&b, "\n%s: the client logged %d lines, such as: %s\n", l.Name, row.ClientLogs,
					"`"+strings.Join(row.ClientLogSamples, "`; `")+"`")
			}
		}
	}

	b.WriteString("\n### Settings\n\n")
	for _, l := range r.Libraries {
		fmt.Fprintf(&b, "- **%s**: %s\n", l.Name, l.Settings)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Lookup returns the row of library in case, whether it ran or was not
// applicable.
func (r *Report) Lookup(caseID, library string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Case == caseID && row.Library == library {
			return row, true
		}
	}
	return Row{}, false
}

// cell formats one number of a row, "n/a" for a library that could not run
// the case, and "–" for a case that was not run.
func (r *Report) cell(caseID, library string, f func(Row) string) string {
	row, ok := r.Lookup(caseID, library)
	switch {
	case !ok:
		return "–"
	case row.NA != "":
		return "n/a"
	}
	return f(row)
}

// Dur formats a duration given in microseconds.
func Dur(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e4:
		return fmt.Sprintf("%.1f ms", us/1e3)
	case us >= 1e3:
		return fmt.Sprintf("%.2f ms", us/1e3)
	}
	return fmt.Sprintf("%.0f µs", us)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/redlock-go/redlock/bench/internal/drivers"
)

// WriteMarkdown writes the summary: run facts, a rate overview, the targets,
// the network and crowd cases, one table per case, and each library's
// settings. chart, if not empty, is the chart's path relative to the
// markdown file.
func (r *Report) WriteMarkdown(w io.Writer, targets []Target, chart string) error {
	var b strings.Builder
	r.writeHeader(&b)
	if chart != "" {
		fmt.Fprintf(&b, "![cycles per second by case and library](%s)\n\n", chart)
	}
	r.writeOverview(&b)
	if len(targets) > 0 {
		b.WriteString("\n### Targets (ratios within this run)\n\n")
		b.WriteString("| goal | case | library | measured | needed | |\n|---|---|---|---|---|---|\n")
		for _, t := range targets {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", t.Goal, t.Case, t.Library, t.Value, t.Need, t.Status)
		}
	}
	r.writeCommands(&b)
	r.writeNetwork(&b)
	r.writeCrowd(&b)
	r.writeLockKinds(&b)
	r.writeDetails(&b)
	r.writeSettings(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHeader writes the run's facts: when, what, on which machine, how.
func (r *Report) writeHeader(b *strings.Builder) {
	m := r.Meta
	fmt.Fprintf(b, "Run %s", m.Date.UTC().Format("2006-01-02 15:04 MST"))
	if m.Commit != "" {
		fmt.Fprintf(b, " at commit %s", m.Commit)
	}
	fmt.Fprintf(b, " with `%s`.\n", m.Command)
	fmt.Fprintf(b, "%s, %s, GOMAXPROCS %d", m.GoVersion, m.Platform, m.GOMAXPROCS)
	if m.CPUModel != "" {
		fmt.Fprintf(b, ", %s", m.CPUModel)
	}
	fmt.Fprintf(b, "; redis-server %s on loopback, PING round trip %s µs at the start (median).\n", m.RedisVersion, Num(m.RoundTripUs))
	if len(r.Cases) > 0 {
		fmt.Fprintf(b, "Each library, in each case: %gs measured after a %gs warm-up, in %d rounds that take the libraries in turn "+
			"(a shorter warm-up before each later round; the first lasts until every client has finished a cycle, up to 5 s more).",
			m.DurationSec, m.WarmupSec, max(m.Rounds, 1))
		if r.hasSlowNode() {
			fmt.Fprintf(b, " The slow node is behind a proxy adding %g ms to every reply.", m.SlowLatencyMs)
		}
		b.WriteString("\n")
	}
	if m.MarkedReady {
		b.WriteString("The nodes were new and empty: redlock's restart quarantine was lifted once with Client.MarkReady before the first case.\n")
	}
	b.WriteString("\n")
}

func (r *Report) hasSlowNode() bool {
	for _, c := range r.Cases {
		if c.SlowNodes > 0 {
			return true
		}
	}
	return false
}

// writeOverview writes the rate of every library in every case.
func (r *Report) writeOverview(b *strings.Builder) {
	b.WriteString("### Cycles per second (handoffs or grants per second on one shared name)\n\n")
	r.writeLibraryHeader(b, "case")
	for _, c := range r.Cases {
		fmt.Fprintf(b, "| %s |", c.Title)
		for _, l := range r.Libraries {
			fmt.Fprintf(b, " %s |", r.cell(c.ID, l.Name, func(row Row) string { return Num(row.Rate) }))
		}
		b.WriteString("\n")
	}
}

// writeLibraryHeader writes a table's header: first, then a right-aligned
// column per library.
func (r *Report) writeLibraryHeader(b *strings.Builder, first string) {
	fmt.Fprintf(b, "| %s |", first)
	for _, l := range r.Libraries {
		fmt.Fprintf(b, " %s |", l.Name)
	}
	b.WriteString("\n|---|")
	for range r.Libraries {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
}

// writeNetwork writes each library's p50 cycle over a network beside the
// floor of a cycle there (see Case.Floor).
func (r *Report) writeNetwork(b *strings.Builder) {
	header := false
	for _, c := range r.Cases {
		if c.DelayUs == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(b, "\n### Over a network\n\nEvery node behind a proxy that delays each way by %s (a LAN). "+
				"The floor of a cycle is its two round trips, 4 × the delay each way, plus the servers' time per "+
				"cycle on one node (Redis CPU per cycle over the node count): 4 × %s = %s plus that time, with the "+
				"delay as set; the table uses the delay as measured, half the difference between the median PING "+
				"round trips through a proxy and around it, sampled before each round. p50/floor near 1 means the "+
				"library adds little to the network's round trips. The proxies (in a child process) wake late by "+
				"themselves; they were found to add %s each way when they started, and wait that much less.\n\n",
				Dur(c.DelayUs), Dur(c.DelayUs), Dur(4*c.DelayUs), Dur(r.Meta.ProxyOverheadUs))
			b.WriteString("| case | delay each way, measured | library | p50 cycle | floor | p50/floor | p99 cycle | cycles/s |\n" +
				"|---|---:|---|---:|---:|---:|---:|---:|\n")
			header = true
		}
		for _, l := range r.Libraries {
			row, ok := r.Row(c.ID, l.Name)
			if !ok || row.Cycles == 0 {
				continue
			}
			floor := c.Floor(row)
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %.2f | %s | %s |\n", c.ID, Dur(c.MeasuredDelayUs), l.Name,
				Dur(row.P50Us), Dur(floor), row.P50Us/floor, Dur(row.P99Us), Num(row.Rate))
		}
	}
}

// writeCrowd writes the cases of separate clients on one shared key: grants
// per second and the acquisitions that ran out of time.
func (r *Report) writeCrowd(b *strings.Builder) {
	header := false
	for _, c := range r.Cases {
		if c.Clients == 0 || !c.Handoffs || !c.Mutex() {
			continue
		}
		if !header {
			fmt.Fprintf(b, "\n### Separate clients on one shared key\n\nEach client loops: acquire (blocking, with "+
				"a %gs deadline of its own, and the library's own way of waiting), a tiny hold, release. Timed out: "+
				"acquisitions begun in the measured window that reached their deadline. Same client again: the "+
				"part of the grants that went to the client that held the key just before, ahead of the others "+
				"waiting (1 in %d when each client's turn comes in order).%s\n\n", c.AcquireTimeoutS, c.Clients, r.tryLoopNote())
			b.WriteString("| case | library | grants/s | same client again | p50 wait | p99 wait | max wait | timed out | errors |\n" +
				"|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
			header = true
		}
		for _, l := range r.Libraries {
			row, ok := r.Row(c.ID, l.Name)
			if !ok {
				continue
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %.1f%% | %s | %s | %s | %d | %d |\n", c.ID, l.Name, Num(row.Rate),
				100*row.AgainShare, Dur(row.P50Us), Dur(row.P99Us), Dur(row.MaxUs), row.Timeouts, row.Errors)
		}
	}
}

// tryLoopNote says how the clients of the try-loop cases acquire, if the
// report has one, as a sentence that starts with a space; "" otherwise.
func (r *Report) tryLoopNote() string {
	for _, c := range r.Cases {
		if c.Try {
			return fmt.Sprintf(" In `tryloop-*` each client acquires instead by one attempt at a time (this "+
				"library's TryAcquire, redsync's TryLockContext, rueidislock's TryWithContext, bsm/redislock's "+
				"Obtain without retries), pausing %s to %s at random after each refusal, under the same deadline.",
				drivers.TryPauseMin, drivers.TryPauseMax)
		}
	}
	return ""
}

// writeDetails writes one table per case with every number of every row.
func (r *Report) writeDetails(b *strings.Builder) {
	b.WriteString("\n### Details per case\n\n")
	b.WriteString("Latency is of a whole cycle (acquire + release), or for one shared key of the wait in " +
		"acquire. Allocations and CPU are the whole benchmark process's in the measured window divided " +
		"by cycles: the library's background goroutines count, and so does the one string the harness " +
		"allocates per cycle for a new key. Redis CPU is the servers' user+system time per cycle (10 ms " +
		"resolution); new connections are those the servers accepted in the window, per thousand cycles.\n")
	for _, c := range r.Cases {
		r.writeCaseDetails(b, c)
	}
}

// writeCaseDetails writes the table of one case.
func (r *Report) writeCaseDetails(b *strings.Builder, c Case) {
	rate, lat := "cycles/s", "cycle"
	switch {
	case !c.Mutex():
		rate, lat = "grants/s", "wait"
	case c.Handoffs:
		rate, lat = "handoffs/s", "wait"
	}
	fmt.Fprintf(b, "\n#### %s (`%s`)\n\n", c.Title, c.ID)
	if c.RoundTripUs > 0 {
		through := ""
		if c.DelayUs > 0 {
			through = " through its proxy"
		}
		fmt.Fprintf(b, "PING round trip to the first node%s during this case: %s µs (median of samples before each round).\n\n", through, Num(c.RoundTripUs))
	}
	fmt.Fprintf(b, "| library | %s | p50 %s | p90 | p99 | max | allocs/cycle | B/cycle | CPU/cycle | Redis CPU/cycle | new conns/1k cycles | errors |\n", rate, lat)
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Libraries {
		row, found := r.Lookup(c.ID, l.Name)
		if !found {
			continue
		}
		if row.NA != "" {
			fmt.Fprintf(b, "| %s | n/a: %s | | | | | | | | | | |\n", l.Name, row.NA)
			continue
		}
		errs := fmt.Sprint(row.Errors)
		if row.LastError != "" {
			errs += fmt.Sprintf(" (last: %s)", strings.ReplaceAll(clip(row.LastError, 80), "|", "/"))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s µs | %s µs | %s | %s |\n",
			l.Name, Num(row.Rate), Dur(row.P50Us), Dur(row.P90Us), Dur(row.P99Us), Dur(row.MaxUs),
			Num(row.AllocsPerCycle), Num(row.BytesPerCycle), Num(row.CPUUsPerCycle), Num(row.ServerCPUUsPerCycle),
			Num(row.NewConnsPer1kCycles), errs)
	}
	for _, l := range r.Libraries {
		if row, ok := r.Lookup(c.ID, l.Name); ok && row.ClientLogs > 0 {
			fmt.Fprintf(b, "\n%s: the client logged %d lines, such as: %s\n", l.Name, row.ClientLogs,
				"`"+strings.Join(row.ClientLogSamples, "`; `")+"`")
		}
	}
}

// writeSettings lists each library's configuration.
func (r *Report) writeSettings(b *strings.Builder) {
	b.WriteString("\n### Settings\n\n")
	for _, l := range r.Libraries {
		trade := ""
		if l.Trade != "" {
			trade = " Gives up " + l.Trade + ": judged by no target, shown for what that guarantee costs."
		}
		fmt.Fprintf(b, "- **%s**: %s%s%s\n", l.Name, l.Settings, trade, r.lockKindSettings(l))
	}
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

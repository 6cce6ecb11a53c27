// Command torture runs the lock under injected faults and checks the
// recorded history, scenario by scenario, against each scenario's expected
// verdict: five redis-server nodes behind per-worker proxies (or, in the
// rediscluster/ scenarios, one Redis Cluster of three masters as the only
// lock node), several worker processes updating a shared register under
// the lock (or, in the semaphore/ scenarios, one register per permit of a
// counting semaphore; in the rwlock/ scenarios, writers updating it and
// readers reading it under a read-write lock; in the multikey/ scenarios,
// one register per name, updated under sets of names locked together),
// faults from kill -9 to clock jumps, resharding and failovers, five
// checkers of safety (linearizability with porcupine, overlapping holders,
// holders over a semaphore's limit, lost updates, fencing order) and one of
// liveness (waits past the bound each scenario states on waiting, and the
// share of acquisitions served; -list prints each bound and how it is
// derived).
//
// Usage:
//
//	go run ./cmd/torture [-scenario regexp] [-duration d] [-seed n] [-report dir] [-list]
//
// It prints a table of the results and writes an HTML report with a
// timeline per scenario, plus each scenario's history as JSON lines, to the
// report directory. The exit status is 0 when every scenario matched its
// expectation, 1 when one did not (in either direction) or could not run,
// and 2 for bad usage. It needs redis-server, and a C compiler for the
// clock scenarios.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/redlock-go/redlock/torture"
	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/report"
	"github.com/redlock-go/redlock/torture/scenario"
	"github.com/redlock-go/redlock/torture/traffic"
)

// defaultReport is the report directory when -report is not given.
const defaultReport = "torture-report"

// progressSteps is the progress bar's resolution per scenario.
const progressSteps = 100

func main() {
	traffic.RunIfWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command: it parses args, runs the selected scenarios and
// returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("torture", flag.ContinueOnError)
	fl.SetOutput(stderr)
	pattern := fl.String("scenario", "", "run only the scenarios whose names match this regular expression (default all)")
	duration := fl.Duration("duration", 0, "how long each scenario runs (default: its own, 4s for most)")
	seed := fl.Uint64("seed", 1, "seed for every random choice of workers and faults")
	dir := fl.String("report", defaultReport, `directory for the HTML report and the histories; "" for none`)
	list := fl.Bool("list", false, "list the scenarios and their expected verdicts, and exit")
	fl.Usage = func() {
		fmt.Fprintf(stderr, "Usage: torture [flags]\n\nRuns the scenario table against real redis-server nodes and checks every history.\n\nFlags:\n")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "torture: unexpected arguments %q\n", fl.Args())
		return 2
	}
	table, err := scenario.Select(scenario.Table(), *pattern)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *list {
		listTable(stdout, table)
		return 0
	}

	began := time.Now()
	outs := runAll(ctx, table, torture.Options{Duration: *duration, Seed: *seed, Dir: *dir}, stderr)
	if err := report.Table(stdout, outs); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	code := 0
	for _, o := range outs {
		if o.Verdict != torture.Pass {
			code = 1
		}
	}
	if len(outs) < len(table) {
		fmt.Fprintf(stderr, "torture: interrupted after %d of %d scenarios\n", len(outs), len(table))
		code = 1
	}
	if *dir != "" {
		meta := report.Run{Command: command(*pattern, *duration, *seed), Seed: *seed, Started: began, Elapsed: time.Since(began)}
		path, err := report.WriteHTML(*dir, meta, outs)
		if err == nil {
			err = writeMarkdown(filepath.Join(*dir, "table.md"), outs)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "\n%d scenarios in %.0fs; report: %s\n", len(outs), time.Since(began).Seconds(), path)
	}
	return code
}

// caughtTries is how many runs a scenario that must catch a violation
// makes at most, each with the next seed, while it catches none (see
// torture.RunUntilCaught).
const caughtTries = 5

// runAll runs the scenarios one after another with a progress bar on
// stderr, and a line per finished scenario. It stops early when ctx ends.
func runAll(ctx context.Context, table []scenario.Scenario, opts torture.Options, stderr io.Writer) []*torture.Outcome {
	bar := progressbar.NewOptions(len(table)*progressSteps,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetVisibility(isTerminal(stderr)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	var outs []*torture.Outcome
	for i, sc := range table {
		if ctx.Err() != nil {
			break
		}
		bar.Describe(fmt.Sprintf("[%d/%d] %-34s", i+1, len(table), sc.Name))
		o := opts
		o.Progress = func(done float64) { _ = bar.Set(i*progressSteps + int(done*0.9*progressSteps)) }
		out := torture.RunUntilCaught(ctx, sc, o, caughtTries)
		outs = append(outs, out)
		_ = bar.Clear()
		cells := report.LivenessCells(out)
		fmt.Fprintf(stderr, "%-5s %-34s expected %-6s  %4d grants, %3d judged violations, wait %s (bound %s), served %s, %s liveness violations  %5.1fs\n",
			out.Verdict, sc.Name, sc.Expect, out.Result.Grants, out.Judged, cells[1], cells[2], cells[3], cells[0], out.Elapsed.Seconds())
		if out.Runs > 1 {
			fmt.Fprintf(stderr, "      run %d of %d at most, seed %d: the runs before caught nothing\n", out.Runs, caughtTries, out.Seed)
		}
		for _, d := range report.LivenessDetails(out, 1) {
			fmt.Fprintf(stderr, "      %s\n", d)
		}
		_ = bar.Set((i + 1) * progressSteps)
	}
	_ = bar.Finish()
	return outs
}

// listTable prints the scenarios with their expectations and their
// bounds on waiting, each with its derivation.
func listTable(w io.Writer, table []scenario.Scenario) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\texpected\tregister\twhat happens\tbound on waiting")
	for _, s := range table {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Expect, s.Register, s.About, bound(s.Liveness()))
	}
	tw.Flush()
}

// bound states b in a line: its numbers, then how they are derived.
func bound(b check.Bound) string {
	if !b.Stated() {
		return "none: " + b.Derivation
	}
	what := "wait ≤ " + b.Wait.String()
	if b.Loops {
		what = "lock free while looping ≤ " + b.Wait.String()
	}
	if b.MinServed > 0 {
		what += fmt.Sprintf(", served ≥ %.1f%%", 100*b.MinServed)
	}
	return what + ": " + b.Derivation
}

// command returns the command line that reproduces a run.
func command(pattern string, d time.Duration, seed uint64) string {
	parts := []string{"go run ./cmd/torture", fmt.Sprintf("-seed %d", seed)}
	if pattern != "" {
		parts = append(parts, "-scenario '"+pattern+"'")
	}
	if d > 0 {
		parts = append(parts, "-duration "+d.String())
	}
	return strings.Join(parts, " ")
}

// writeMarkdown writes the result table as Markdown.
func writeMarkdown(path string, outs []*torture.Outcome) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = report.Markdown(f, outs)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// isTerminal reports whether w is a terminal: the progress bar redraws
// itself with carriage returns, which only a terminal renders well.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

package torture

import (
	"context"

	"github.com/redlock-go/redlock/torture/scenario"
)

// RunUntilCaught runs sc as Run does, and runs a scenario that must catch
// a violation again, with the next seed, while it caught none in a run
// where nothing else went wrong, at most tries runs in all. Whether a
// fault meets a held lock is up to the scheduler: a restart that lands
// after the holder's critical section loses nothing, so one run of such a
// row may see no overlap at all (multikey/restart-empty missed one run in
// three here). A checker that can never fail still fails the row, after
// tries runs. The outcome is the last run's; its Runs says how many there
// were and its Seed which seed the last one had.
func RunUntilCaught(ctx context.Context, sc scenario.Scenario, opts Options, tries int) *Outcome {
	var out *Outcome
	for run := 1; ; run++ {
		out = Run(ctx, sc, opts)
		out.Runs = run
		if run >= tries || !out.missed() || ctx.Err() != nil {
			return out
		}
		opts.Seed++
	}
}

// missed reports a run of a scenario that must catch a violation that
// caught none and saw nothing else go wrong.
func (o *Outcome) missed() bool {
	return o.Scenario.Expect == scenario.Caught && o.Verdict == Fail && o.Judged == 0 && o.Starved == 0
}

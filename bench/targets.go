package main

import (
	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/report"
)

// Peer names as the drivers call them.
const (
	redsync      = "redsync"
	rueidislock  = "rueidislock"
	bsmRedislock = "bsm/redislock"
)

// targets checks the project's performance goals for each of its adapters,
// all as ratios within one run (5 nodes unless said otherwise), and adds how
// much one slow node costs as information.
func targets(rep *report.Report) []report.Target {
	var ours, peers []string
	baseline := false
	for _, l := range rep.Libraries {
		switch {
		case l.Ours:
			ours = append(ours, l.Name)
		case l.Baseline:
			baseline = true
		default:
			peers = append(peers, l.Name)
		}
	}
	var ts []report.Target
	for _, o := range ours {
		ts = append(ts,
			rep.AtLeast("1 goroutine: cycles/s", "serial-5", o, redsync, report.RateMetric, 2.5),
			rep.WithinRoundTrips("1 goroutine: p50 cycle", "serial-5", o, report.P50Metric, 3),
			rep.AtLeast("64 goroutines: cycles/s", "parallel-5", o, redsync, report.RateMetric, 5),
			rep.AtLeast("64 goroutines, 1 node: cycles/s", "parallel-1", o, rueidislock, report.RateMetric, 1),
			rep.AtLeast("one shared key: handoffs/s", "shared-5", o, redsync, report.RateMetric, 3),
			rep.AtMost("one shared key: p99 wait", "shared-5", o, redsync, report.P99Metric, 0.2),
			rep.FewestAllocs("allocations per cycle", o, peers),
		)
	}
	// Separate clients on one key: grants and allocations per grant
	// against the peer fastest there, with no goal.
	for _, o := range ours {
		for _, c := range []struct{ id, peer string }{{"crowd-1", bsmRedislock}, {"crowd-5", redsync}} {
			ts = append(ts,
				rep.Versus("separate clients, one key: grants/s", c.id, o, c.peer, report.RateMetric),
				rep.Versus("separate clients, one key: allocations per grant", c.id, o, c.peer, report.AllocsMetric),
			)
		}
	}
	for _, name := range append(append([]string(nil), ours...), redsync) {
		ts = append(ts,
			rep.Ratio("one slow node: 1-goroutine cycles/s", "serial-5slow", "serial-5", name, report.RateMetric),
			rep.Ratio("one slow node: 64-goroutine cycles/s", "parallel-5slow", "parallel-5", name, report.RateMetric),
		)
	}
	if !baseline {
		return ts
	}
	// The least Redis work of a cycle from a lean client (see
	// drivers.BaselineName), against redsync, and each adapter against it.
	// One goroutine has nothing to batch, so there the baseline is close to
	// the limit the nodes' round trips set; 64 goroutines can share
	// requests, which the baseline leaves to rueidis's pipelining.
	limit := drivers.BaselineName
	p50 := rep.WithinRoundTrips("baseline (not a lock): p50 cycle", "serial-5", limit, report.P50Metric, 3)
	if p50.Status != report.NA {
		p50.Status, p50.Need = report.Info, "—"
	}
	ts = append(ts,
		rep.Versus("baseline (not a lock): cycles/s", "serial-5", limit, redsync, report.RateMetric),
		p50,
		rep.Versus("baseline (not a lock): cycles/s", "parallel-5", limit, redsync, report.RateMetric),
	)
	for _, o := range ours {
		for _, c := range []string{"serial-1", "serial-5", "parallel-1", "parallel-5"} {
			ts = append(ts, rep.Versus("against the baseline: cycles/s", c, o, limit, report.RateMetric))
		}
	}
	return ts
}

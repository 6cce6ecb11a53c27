package main

import (
	"github.com/redlock-go/redlock/bench/internal/report"
)

// Peer names as the drivers call them.
const (
	redsync     = "redsync"
	rueidislock = "rueidislock"
)

// targets checks the project's performance goals for each of its adapters,
// all as ratios within one run (5 nodes unless said otherwise), and adds how
// much one slow node costs as information.
func targets(rep *report.Report) []report.Target {
	var ours, peers []string
	for _, l := range rep.Libraries {
		if l.Ours {
			ours = append(ours, l.Name)
		} else {
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
	for _, name := range append(append([]string(nil), ours...), redsync) {
		ts = append(ts,
			rep.Ratio("one slow node: 1-goroutine cycles/s", "serial-5slow", "serial-5", name, report.RateMetric),
			rep.Ratio("one slow node: 64-goroutine cycles/s", "parallel-5slow", "parallel-5", name, report.RateMetric),
		)
	}
	return ts
}

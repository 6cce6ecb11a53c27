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

// libraryKinds sorts the report's libraries: this library's adapters, the
// peers, the peers that trade a guarantee away, and whether the baseline
// ran.
func libraryKinds(rep *report.Report) (ours, peers, trades []string, baseline bool) {
	for _, l := range rep.Libraries {
		switch {
		case l.Trade != "":
			trades = append(trades, l.Name)
		case l.Ours:
			ours = append(ours, l.Name)
		case l.Baseline:
			baseline = true
		case l.Floor:
		default:
			peers = append(peers, l.Name)
		}
	}
	return ours, peers, trades, baseline
}

// targets checks the project's performance goals for each of its adapters,
// all as ratios within one run, with the default guarantees (fencing and
// the restart quarantine on): ahead of every peer in every case of a plain
// lock, serial-1 at
// 1.1x bsm/redislock, parallel-5 at 5x redsync, tryloop-5 at 1x redsync,
// the fewest allocations, no failed release or extend, and close to the baseline's least Redis work
// (below). It adds how much one slow node costs as information.
func targets(rep *report.Report) []report.Target {
	ours, peers, trades, baseline := libraryKinds(rep)
	var ts []report.Target
	for _, o := range ours {
		ts = append(ts,
			rep.AheadOfPeers("ahead of every peer", o, peers),
			rep.AtLeast("1 goroutine, 1 node: cycles/s", "serial-1", o, bsmRedislock, report.RateMetric, 1.1),
			rep.AtLeast("64 goroutines: cycles/s", "parallel-5", o, redsync, report.RateMetric, 5),
			rep.FewestAllocs("allocations per cycle", o, peers),
			rep.NoErrors("no failed release or extend under load", o),
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
	// Separate clients looping one attempt on one key: at least as many
	// grants as redsync.
	for _, o := range ours {
		ts = append(ts, rep.AtLeast("separate clients looping one attempt, one key: grants/s", "tryloop-5", o, redsync, report.RateMetric, 1))
	}
	ts = append(ts, substituteTargets(rep, ours)...)
	ts = append(ts, costTargets(rep, ours, peers)...)
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
		rep.Versus("baseline (not a lock): cycles/s", "serial-1", limit, bsmRedislock, report.RateMetric),
		rep.Versus("baseline (not a lock): cycles/s", "serial-5", limit, redsync, report.RateMetric),
		p50,
		rep.Versus("baseline (not a lock): cycles/s", "parallel-5", limit, redsync, report.RateMetric),
	)
	// Close to the least Redis work: one goroutine's cycles at 0.9x the
	// baseline's rate and its p50 at 1.2x the baseline's at most; 64
	// goroutines at 1.5x the baseline, which does not batch.
	for _, o := range ours {
		for _, c := range []string{"serial-1", "serial-5"} {
			ts = append(ts,
				rep.AtLeast("against the baseline: cycles/s", c, o, limit, report.RateMetric, 0.9),
				rep.AtMost("against the baseline: p50 cycle", c, o, limit, report.P50Metric, 1.2))
		}
		ts = append(ts, rep.AtLeast("against the baseline: cycles/s", "parallel-5", o, limit, report.RateMetric, 1.5))
	}
	// The same comparisons where round trips, not the two cores, set the
	// pace: over a LAN, with no goal of their own.
	for _, o := range ours {
		for _, c := range []string{"lan-1", "lan-5"} {
			ts = append(ts,
				rep.Versus("against the baseline over a LAN: cycles/s", c, o, limit, report.RateMetric),
				rep.Versus("against the baseline over a LAN: p50 cycle", c, o, limit, report.P50Metric))
		}
	}
	return append(ts, tradeTargets(rep, trades, limit)...)
}

// tradeTargets sets each configuration that gives up a guarantee beside the
// targets it would have, with no goal: what the guarantee costs.
func tradeTargets(rep *report.Report, trades []string, limit string) []report.Target {
	var ts []report.Target
	for _, o := range trades {
		ts = append(ts,
			rep.Versus("a guarantee off: cycles/s", "serial-1", o, bsmRedislock, report.RateMetric),
			rep.Versus("a guarantee off: cycles/s", "serial-1", o, limit, report.RateMetric),
			rep.Versus("a guarantee off: cycles/s", "serial-5", o, limit, report.RateMetric),
			rep.Versus("a guarantee off: cycles/s", "parallel-5", o, limit, report.RateMetric),
		)
	}
	return ts
}

// substituteTargets compares each of ours's semaphores and read-write
// locks with the substitute of the peer fastest at a plain lock on as many
// nodes (a mutex per permit; a mutex for readers and writers alike), with
// no goal: the peers have no such locks.
func substituteTargets(rep *report.Report, ours []string) []report.Target {
	var ts []report.Target
	for _, o := range ours {
		for _, c := range []struct{ id, peer string }{
			{"semaphore-1", bsmRedislock}, {"semaphore-5", redsync}, {"rwlock-1", bsmRedislock}, {"rwlock-5", redsync},
		} {
			ts = append(ts, rep.Versus("one client's goroutines, against a peer's substitute: grants/s", c.id, o, c.peer, report.RateMetric))
		}
		for _, m := range []report.Metric{report.RateMetric, report.ServerCPUMetric} {
			ts = append(ts, rep.Versus("several clients' goroutines, against a peer's substitute: "+m.Name, "semclients-1", o, bsmRedislock, m))
		}
	}
	return ts
}

package main

import (
	"strings"

	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/report"
)

// The goals of the cost per lock, with every guarantee on.
const (
	// maxServerCPURatio: Redis CPU per cycle of a plain lock, one request
	// at a time, at most this times the leanest peer's on as many nodes.
	maxServerCPURatio = 1.2
	// minCrowdRate: a crowd's grants per second at least this times the
	// best peer's.
	minCrowdRate = 0.8
	// maxCrowdWait: a crowd's longest wait at most this times the shortest
	// longest wait of the peers, which do not serve their clients in order.
	maxCrowdWait = 0.1
	// minParallelRate: parallel-5 at least this times the baseline.
	minParallelRate = 1.5
)

// leanest names the peer leanest at a plain lock on a case's nodes:
// bsm/redislock on one node, redsync on five.
var leanest = map[string]string{"serial-1": bsmRedislock, "lan-1": bsmRedislock, "serial-5": redsync, "lan-5": redsync}

// costTargets checks what a lock costs the servers and the client against
// the leanest peers, with every guarantee on, and shows what each
// guarantee that can be turned off costs, with no goal.
func costTargets(rep *report.Report, ours, peers []string) []report.Target {
	var ts []report.Target
	for _, o := range ours {
		for _, c := range []string{"serial-1", "serial-5", "lan-1", "lan-5"} {
			ts = append(ts, rep.AtMost("cost per lock: Redis CPU per cycle", c, o, leanest[c], report.ServerCPUMetric, maxServerCPURatio))
		}
		ts = append(ts,
			rep.AtMost("cost per lock: client CPU per cycle", "serial-1", o, bsmRedislock, report.ClientCPUMetric, 1),
			rep.AtLeast("cost per lock: cycles/s", "serial-1", o, bsmRedislock, report.RateMetric, 1),
		)
		if best := rep.Best("semaphore-1", peers); best != "" {
			ts = append(ts,
				rep.AtLeast("cost per lock: semaphore grants/s, against the best substitute", "semaphore-1", o, best, report.RateMetric, 1),
				rep.AtMost("cost per lock: semaphore p99 wait, against the best substitute", "semaphore-1", o, best, report.P99Metric, 1),
			)
		}
		for _, c := range []string{"crowd-1", "crowd-5"} {
			if best := rep.Best(c, peers); best != "" {
				ts = append(ts, rep.AtLeast("cost per lock: a fair crowd's grants/s", c, o, best, report.RateMetric, minCrowdRate))
			}
			if fairest := rep.Shortest(c, peers, report.MaxMetric); fairest != "" {
				ts = append(ts, rep.AtMost("cost per lock: a fair crowd's longest wait", c, o, fairest, report.MaxMetric, maxCrowdWait))
			}
		}
		ts = append(ts, rep.AtLeast("cost per lock: 64 goroutines, cycles/s", "parallel-5", o, drivers.BaselineName, report.RateMetric, minParallelRate))
	}
	ts = append(ts, floorCosts(rep, ours)...)
	ts = append(ts, fairnessCosts(rep, ours, peers)...)
	return append(ts, guaranteeCosts(rep)...)
}

// fairnessCosts shows what serving a crowd in order costs on one node, as
// ratios with no goal: each adapter's crowd waiting in Acquire (crowd-1)
// against the same clients looping on TryAcquire, which no queue orders
// (tryloop-1), in grants/s and longest wait; and that unordered crowd
// against the best peer's, in the same case.
func fairnessCosts(rep *report.Report, ours, peers []string) []report.Target {
	var ts []report.Target
	for _, o := range ours {
		ts = append(ts,
			rep.Ratio("cost of a guarantee, a fair queue: in order against unordered, grants/s", "crowd-1", "tryloop-1", o, report.RateMetric),
			rep.Ratio("cost of a guarantee, a fair queue: in order against unordered, longest wait", "crowd-1", "tryloop-1", o, report.MaxMetric),
		)
		if best := rep.Best("tryloop-1", peers); best != "" {
			ts = append(ts, rep.Versus("an unordered crowd, against the best peer's: grants/s", "tryloop-1", o, best, report.RateMetric))
		}
	}
	return ts
}

// floorCosts shows the least Redis CPU a fenced lock costs (the fenced
// floor, drivers.FloorName) against the leanest peer on as many nodes, and
// each adapter against that floor, as ratios with no goal: what fencing
// alone costs, and how far above it the other guarantees put a lock.
func floorCosts(rep *report.Report, ours []string) []report.Target {
	if !ran(rep, drivers.FloorName) {
		return nil
	}
	var ts []report.Target
	for _, c := range []string{"serial-1", "serial-5", "lan-1", "lan-5"} {
		ts = append(ts, rep.Versus("the least a fenced lock costs: Redis CPU per cycle, against the leanest peer", c, drivers.FloorName, leanest[c], report.ServerCPUMetric))
		for _, o := range ours {
			ts = append(ts, rep.Versus("every guarantee on: Redis CPU per cycle, against the fenced floor", c, o, drivers.FloorName, report.ServerCPUMetric))
		}
	}
	return ts
}

// guaranteeCosts shows, for each configuration that gives up a guarantee,
// the configuration with every guarantee on that it departs from against
// it, one request at a time: the guarantee's cost, as ratios with no goal.
// Fencing has no option to give it up, and so no row.
func guaranteeCosts(rep *report.Report) []report.Target {
	var ts []report.Target
	for _, l := range rep.Libraries {
		if l.Trade == "" || l.TradeOf == "" {
			continue
		}
		guarantee, _, _ := strings.Cut(l.Trade, " (")
		goal := "cost of a guarantee, " + guarantee + ": with it against without it, "
		for _, c := range []string{"serial-1", "serial-5"} {
			for _, m := range []report.Metric{report.ServerCPUMetric, report.ClientCPUMetric, report.RateMetric} {
				ts = append(ts, rep.Versus(goal+m.Name, c, l.TradeOf, l.Name, m))
			}
		}
	}
	return ts
}

// ran says whether library name is in the report.
func ran(rep *report.Report, name string) bool {
	for _, l := range rep.Libraries {
		if l.Name == name {
			return true
		}
	}
	return false
}

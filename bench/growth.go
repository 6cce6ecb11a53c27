package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/redlock-go/redlock/bench/internal/report"
	"github.com/redlock-go/redlock/bench/internal/runner"
)

// growthPlan is the sizes of the growth curves (-growth): what a cycle
// costs as the work grows in one dimension.
type growthPlan struct {
	nodes      []int // node counts of the two node curves
	workers    int   // goroutines of the many-goroutines node curve
	goroutines []int // goroutine counts, on onNodes nodes
	waiters    []int // separate clients on one shared key, on onNodes nodes
	onNodes    int
}

// defaultGrowth is the plan of -growth: 27 points, about 7 minutes here.
func defaultGrowth() growthPlan {
	return growthPlan{
		nodes:      []int{1, 3, 5, 7, 9},
		workers:    parallelWorkers,
		goroutines: []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		waiters:    []int{2, 4, 8, 16, 32, 64, 128},
		onNodes:    maxNodes,
	}
}

// maxNodes returns the most nodes a point of g uses.
func (g growthPlan) maxNodes() int { return max(slices.Max(g.nodes), g.onNodes) }

// series returns the growth curves and the cases of their points.
func (g growthPlan) series() ([]report.Series, []benchCase) {
	type curve struct {
		id, title, xLabel string
		xs                []int
		point             func(x int) benchCase
	}
	on := strconv.Itoa(g.onNodes) + " nodes"
	curves := []curve{
		{"nodes-serial", "1 goroutine, new key per cycle, by nodes", "nodes", g.nodes, func(n int) benchCase {
			return growthCase(n, runner.Case{Workers: 1, Keys: runner.NewKeyEachCycle}, 0)
		}},
		{"nodes-parallel", strconv.Itoa(g.workers) + " goroutines, distinct keys, by nodes", "nodes", g.nodes, func(n int) benchCase {
			return growthCase(n, runner.Case{Workers: g.workers, Keys: runner.KeyPerWorker}, 0)
		}},
		{"goroutines", "Goroutines on distinct keys, " + on, "goroutines", g.goroutines, func(w int) benchCase {
			return growthCase(g.onNodes, runner.Case{Workers: w, Keys: runner.KeyPerWorker}, 0)
		}},
		{"waiters", "Separate clients on one shared key, " + on, "clients", g.waiters, func(w int) benchCase {
			return growthCase(g.onNodes, crowdCase(w), w)
		}},
	}
	var series []report.Series
	var cs []benchCase
	for _, c := range curves {
		s := report.Series{ID: c.id, Title: c.title, XLabel: c.xLabel}
		for _, x := range c.xs {
			bc := c.point(x)
			bc.ID = c.id + "-" + strconv.Itoa(x)
			bc.Title = c.title + ": " + strconv.Itoa(x)
			s.Points = append(s.Points, report.Point{X: float64(x), Case: bc.ID})
			cs = append(cs, bc)
		}
		series = append(series, s)
	}
	return series, cs
}

// growthCase is one point of a growth curve: work on nodes loopback nodes,
// by clients separate clients (0: one client for all the goroutines).
func growthCase(nodes int, work runner.Case, clients int) benchCase {
	return benchCase{
		Case: report.Case{
			Workers: work.Workers, Nodes: nodes, Handoffs: work.Keys == runner.SharedKey,
			Clients: clients, AcquireTimeoutS: work.AcquireTimeout.Seconds(),
		},
		work: work,
	}
}

// runGrowth runs the selected points of the growth curves of g with every
// selected library, and returns the report with its series.
func runGrowth(ctx context.Context, cfg config, g growthPlan, logs *clientLog, progress io.Writer) (*report.Report, error) {
	all, cs := g.series()
	selected, libs, err := selectCases(cfg, cs)
	if err != nil {
		return nil, err
	}
	s, rep, err := newSession(ctx, cfg, logs, g.maxNodes(), libs)
	if err != nil {
		return nil, err
	}
	defer s.close()
	for _, c := range selected {
		rep.Cases = append(rep.Cases, c.Case)
	}
	for _, ser := range all {
		ser.Points = slices.DeleteFunc(ser.Points, func(p report.Point) bool { _, ok := rep.Case(p.Case); return !ok })
		if len(ser.Points) > 0 {
			rep.Series = append(rep.Series, ser)
		}
	}
	if err := s.run(ctx, rep, s.plan(rep, selected, libs), progress); err != nil {
		return nil, fmt.Errorf("growth: %w", err)
	}
	sortRows(rep)
	return rep, nil
}

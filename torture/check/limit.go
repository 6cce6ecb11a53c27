package check

import (
	"fmt"
	"sort"
	"strings"
)

// CheckLimit checks that no semaphore had more holders at once than its
// limit. It counts, over time, the holding intervals [Granted, End] of the
// grants of each semaphore (the grants with a Limit, by Name): the same
// validity windows as the overlap checker, so a holder stops counting at
// its validity deadline even if it releases later. Clients that give one
// name different limits admit as many holders as the largest, which is
// the one checked. It returns a violation per period in which a
// semaphore's holders outnumbered its limit, and false when no grant was of
// a semaphore. start is the run's start, for the times in the details.
func CheckLimit(grants []Grant, start int64) ([]Violation, bool) {
	bySemaphore := map[string][]Grant{}
	var names []string
	for _, g := range grants {
		if g.Limit <= 0 {
			continue
		}
		if _, ok := bySemaphore[g.Name]; !ok {
			names = append(names, g.Name)
		}
		bySemaphore[g.Name] = append(bySemaphore[g.Name], g)
	}
	sort.Strings(names)
	var out []Violation
	for _, name := range names {
		out = append(out, overLimit(bySemaphore[name], relClock(start))...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, len(names) > 0
}

// holdEdge is where a grant's holding interval begins (delta 1) or ends
// (delta -1).
type holdEdge struct {
	t     int64
	delta int
	grant int // index in the semaphore's grants
}

// overLimit returns a violation per period in which more of grants, the
// grants of one semaphore, were held at once than its limit. Intervals are
// half-open: a holder whose interval ends when another's begins is not
// counted with it, as in the overlap checker.
func overLimit(grants []Grant, clock relClock) []Violation {
	limit := 0
	var edges []holdEdge
	for i, g := range grants {
		limit = max(limit, g.Limit)
		if g.End() > g.Granted {
			edges = append(edges, holdEdge{g.Granted, 1, i}, holdEdge{g.End(), -1, i})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].delta < edges[j].delta // ends first
	})
	var out []Violation
	held := map[int]bool{}
	var cur *excess
	for _, e := range edges {
		if e.delta > 0 {
			held[e.grant] = true
		} else {
			delete(held, e.grant)
		}
		switch {
		case cur == nil && len(held) > limit:
			cur = &excess{start: e.t, workers: map[string]bool{}}
		case cur != nil && len(held) <= limit:
			out = append(out, cur.violation(e.t, grants, limit, clock))
			cur = nil
		}
		if cur != nil {
			cur.note(held, grants)
		}
	}
	return out
}

// excess is a period in which a semaphore has more holders than its limit,
// as overLimit sees it unfold.
type excess struct {
	start   int64
	peak    []int           // the grants held at the period's largest count
	workers map[string]bool // every holder during the period
}

// note records who holds the semaphore now.
func (x *excess) note(held map[int]bool, grants []Grant) {
	for i := range held {
		x.workers[grants[i].Worker] = true
	}
	if len(held) > len(x.peak) {
		x.peak = x.peak[:0]
		for i := range held {
			x.peak = append(x.peak, i)
		}
		sort.Slice(x.peak, func(i, j int) bool { return grants[x.peak[i]].Granted < grants[x.peak[j]].Granted })
	}
}

// violation returns the period as a violation ending at end.
func (x *excess) violation(end int64, grants []Grant, limit int, clock relClock) Violation {
	holders := make([]string, len(x.peak))
	for i, gi := range x.peak {
		g := grants[gi]
		holders[i] = fmt.Sprintf("%s on %s (fence %d) from %s to %s", g.Worker, g.Key, g.Fence, clock.at(g.Granted), clock.at(g.End()))
	}
	g := grants[x.peak[0]]
	return Violation{
		Checker: OverLimit, Start: x.start, End: end, Workers: sortedKeys(x.workers),
		Detail: fmt.Sprintf("%d holders of %s at once, over its limit of %d, from %s for %.1f ms: %s",
			len(x.peak), g.Name, limit, clock.at(x.start), float64(end-x.start)/1e6, strings.Join(holders, "; ")),
	}
}

package check

import (
	"fmt"
	"sort"
)

// CheckFenceOrder checks that fencing tokens strictly increase in grant
// order: every grant whose attempt began after another grant returned has a
// larger token. Grants whose attempts overlap are not ordered and not
// compared. Readers of a read-write lock are ordered with its writers:
// every grant, shared or not, draws its token from the name's one counter.
// It reports false when no grant carried a token. start is the
// run's start, for the times in the violations' details.
func CheckFenceOrder(grants []Grant, start int64) ([]Violation, bool) {
	clock := relClock(start)
	applicable := false
	for _, g := range grants {
		if g.Fence != 0 {
			applicable = true
			break
		}
	}
	if !applicable {
		return nil, false
	}
	// grants are ordered by Granted; walk them by Invoke, folding in every
	// grant that returned before the current one began.
	byInvoke := append([]Grant(nil), grants...)
	sort.SliceStable(byInvoke, func(i, j int) bool { return byInvoke[i].Invoke < byInvoke[j].Invoke })
	var out []Violation
	var best Grant // the earlier grant with the largest token
	next := 0
	for _, g := range byInvoke {
		for next < len(grants) && grants[next].Granted < g.Invoke {
			if grants[next].Fence >= best.Fence {
				best = grants[next]
			}
			next++
		}
		if best.Worker != "" && g.Fence <= best.Fence {
			out = append(out, Violation{
				Checker: FenceOrder, Start: g.Granted, End: g.Granted, Workers: []string{best.Worker, g.Worker},
				Detail: fmt.Sprintf("%s was granted fence %d at %s, not above fence %d granted to %s at %s",
					g.Worker, g.Fence, clock.at(g.Granted), best.Fence, best.Worker, clock.at(best.Granted)),
			})
		}
	}
	return out, true
}

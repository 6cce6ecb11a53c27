package check

import "fmt"

// CheckOverlap returns one violation per pair of grants whose holding
// intervals [Granted, End] overlap and that may not hold together: two
// clients believed they held the lock at the same time, or a writer and a
// reader of a read-write lock did. Two readers hold together by design.
// start is the run's start, for the times in the violations' details.
func CheckOverlap(grants []Grant, start int64) []Violation {
	clock := relClock(start)
	var out []Violation
	// grants are ordered by Granted; active holds earlier grants that may
	// still be held.
	var active []Grant
	for _, g := range grants {
		kept := active[:0]
		for _, a := range active {
			if a.End() > g.Granted {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			if g.Granted < g.End() && !(a.Shared && g.Shared) {
				out = append(out, overlap(a, g, clock))
			}
		}
		active = append(active, g)
	}
	return out
}

// overlap returns the violation of g, granted while a held the key.
func overlap(a, g Grant, clock relClock) Violation {
	end := min(a.End(), g.End())
	return Violation{
		Checker: Overlap, Start: g.Granted, End: end, Workers: []string{a.Worker, g.Worker},
		Detail: fmt.Sprintf("%s was granted the lock%s at %s (fence %d) while %s held it%s from %s until %s (fence %d): %.1f ms together",
			g.Worker, holding(g), clock.at(g.Granted), g.Fence, a.Worker, holding(a), clock.at(a.Granted), clock.at(a.End()), a.Fence,
			float64(end-g.Granted)/1e6),
	}
}

// holding returns " shared" for a reader's grant, to say so in a detail,
// and "" for a writer's or a lock's.
func holding(g Grant) string {
	if g.Shared {
		return " shared"
	}
	return ""
}

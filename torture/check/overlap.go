package check

import "fmt"

// CheckOverlap returns one violation per pair of grants whose holding
// intervals [Granted, End] overlap: two clients believed they held the lock
// at the same time. start is the run's start, for the times in the
// violations' details.
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
			if g.Granted < g.End() {
				end := min(a.End(), g.End())
				out = append(out, Violation{
					Checker: Overlap, Start: g.Granted, End: end, Workers: []string{a.Worker, g.Worker},
					Detail: fmt.Sprintf("%s was granted the lock at %s (fence %d) while %s held it from %s until %s (fence %d): %.1f ms together",
						g.Worker, clock.at(g.Granted), g.Fence, a.Worker, clock.at(a.Granted), clock.at(a.End()), a.Fence,
						float64(end-g.Granted)/1e6),
				})
			}
		}
		active = append(active, g)
	}
	return out
}

package check

import (
	"fmt"

	"github.com/redlock-go/redlock/torture/history"
)

// opObserve is the operation of an observer's record of an election's
// change (traffic.OpObserve), a single Info event.
const opObserve = "observe"

// CheckObserved checks what the observers of an election saw, each
// observer apart: the leaders it reported come in strictly increasing
// terms, and one whose token was granted has the term of that grant. A
// token no grant made is not a violation by itself: a campaign that a
// quorum of nodes granted and that failed (its validity spent, a fencing
// step refused) holds the lock there until its clean-up, and an observer
// reads the nodes, not the candidates. It reports false when no observer
// recorded anything. start is the run's start, for the times in the
// violations' details.
func CheckObserved(events []history.Event, grants []Grant, start int64) ([]Violation, bool) {
	clock := relClock(start)
	terms := map[string]uint64{}
	for _, g := range grants {
		terms[g.Token] = g.Fence
	}
	last := map[string]history.Event{}
	var out []Violation
	applicable := false
	for _, ev := range events {
		if ev.Type != history.Info || ev.Op != opObserve {
			continue
		}
		applicable = true
		if ev.Token == "" {
			continue // a vacancy
		}
		term, granted := terms[ev.Token]
		switch prev, seen := last[ev.Process]; {
		case granted && term != ev.Fence:
			out = append(out, Violation{Checker: Observed, Start: ev.Time, End: ev.Time, Workers: []string{ev.Process},
				Detail: fmt.Sprintf("%s saw %s lead with term %d at %s, which its grant did not give", ev.Process, ev.Detail, ev.Fence, clock.at(ev.Time))})
		case seen && ev.Fence <= prev.Fence:
			out = append(out, Violation{Checker: Observed, Start: prev.Time, End: ev.Time, Workers: []string{ev.Process},
				Detail: fmt.Sprintf("%s saw %s lead with term %d at %s after %s with term %d at %s", ev.Process,
					ev.Detail, ev.Fence, clock.at(ev.Time), prev.Detail, prev.Fence, clock.at(prev.Time))})
		}
		last[ev.Process] = ev
	}
	return out, applicable
}

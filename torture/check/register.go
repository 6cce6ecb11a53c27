package check

import (
	"fmt"

	"github.com/redlock-go/redlock/torture/history"
)

// CheckLostUpdates replays the register's own record of the writes it
// accepted. Every write says which version its value was computed from;
// one computed from an older version than the current one overwrites the
// updates in between without having seen them. It returns a violation per
// such write, the number of updates lost, and the number of accepted
// writes. start is the run's start, for the times in the details.
func CheckLostUpdates(events []history.Event, start int64) (violations []Violation, lost, writes int) {
	clock := relClock(start)
	var current int64
	writers := map[int64]string{} // version → worker that wrote it
	for _, ev := range events {
		if ev.Process != history.ProcRegister || ev.Op != history.OpWrite || ev.Type != history.OK {
			continue
		}
		writes++
		if ev.BasedOn != current {
			n := current - ev.BasedOn
			lost += int(n)
			workers := []string{ev.Worker}
			var victims []string
			for v := ev.BasedOn + 1; v <= current; v++ {
				victims = append(victims, writers[v])
			}
			workers = append(workers, victims...)
			violations = append(violations, Violation{
				Checker: LostUpdate, Start: ev.Time, End: ev.Time, Workers: workers,
				Detail: fmt.Sprintf("%s wrote at %s (fence %d) a value computed from version %d, overwriting %d acknowledged update(s) up to version %d by %v",
					ev.Worker, clock.at(ev.Time), ev.Fence, ev.BasedOn, n, current, victims),
			})
		}
		current = ev.Version
		writers[current] = ev.Worker
	}
	return violations, lost, writes
}

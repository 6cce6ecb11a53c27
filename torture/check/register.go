package check

import (
	"fmt"

	"github.com/redlock-go/redlock/torture/history"
)

// registerLog is what CheckLostUpdates knows of one register: its current
// version and who wrote each version.
type registerLog struct {
	current int64
	writers map[int64]string // version → worker that wrote it
}

// CheckLostUpdates replays the register service's own record of the writes
// it accepted, register by register (a semaphore's permits each guard one,
// named by the permit's key). Every write says which version its value was
// computed from; one computed from an older version than the current one
// overwrites the updates in between without having seen them. It returns a
// violation per such write, the number of updates lost, and the number of
// accepted writes. start is the run's start, for the times in the details.
func CheckLostUpdates(events []history.Event, start int64) (violations []Violation, lost, writes int) {
	clock := relClock(start)
	registers := map[string]*registerLog{}
	for _, ev := range events {
		if ev.Process != history.ProcRegister || ev.Op != history.OpWrite || ev.Type != history.OK {
			continue
		}
		writes++
		reg := registers[ev.Key]
		if reg == nil {
			reg = &registerLog{writers: map[int64]string{}}
			registers[ev.Key] = reg
		}
		if ev.BasedOn != reg.current {
			n := reg.current - ev.BasedOn
			lost += int(n)
			var victims []string
			for v := ev.BasedOn + 1; v <= reg.current; v++ {
				victims = append(victims, reg.writers[v])
			}
			violations = append(violations, Violation{
				Checker: LostUpdate, Start: ev.Time, End: ev.Time, Workers: append([]string{ev.Worker}, victims...),
				Detail: fmt.Sprintf("%s wrote%s at %s (fence %d) a value computed from version %d, overwriting %d acknowledged update(s) up to version %d by %v",
					ev.Worker, registerName(ev.Key), clock.at(ev.Time), ev.Fence, ev.BasedOn, n, reg.current, victims),
			})
		}
		reg.current = ev.Version
		reg.writers[reg.current] = ev.Worker
	}
	return violations, lost, writes
}

// registerName returns " register <key>" to name a register in a detail,
// or "" for a register without a name.
func registerName(key string) string {
	if key == "" {
		return ""
	}
	return " register " + key
}

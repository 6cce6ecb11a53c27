package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// mutexInput is one operation on the mutex model.
type mutexInput struct {
	release bool
	worker  int
}

// free is the mutex model's state when nobody holds the lock.
const free = -1

// mutexModel is a lock that one worker at a time can hold: acquire needs
// it free, release needs the caller to hold it. Failed acquisition attempts
// are left out of the history: a Redlock attempt can fail even when the lock
// is free (split votes, slow nodes), so in the model they would be a no-op
// that fits anywhere, and they only slow the search down.
var mutexModel = porcupine.Model{
	Init: func() any { return free },
	Step: func(state, input, _ any) (bool, any) {
		holder, in := state.(int), input.(mutexInput)
		if in.release {
			return holder == in.worker, free
		}
		return holder == free, in.worker
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(mutexInput)
		if in.release {
			return fmt.Sprintf("release(worker-%d)", in.worker)
		}
		return fmt.Sprintf("acquire(worker-%d)", in.worker)
	},
	DescribeState: func(state any) string {
		if state.(int) == free {
			return "free"
		}
		return fmt.Sprintf("held by worker-%d", state.(int))
	},
}

// CheckLinearizable checks the grants against the mutex model. Each grant
// is an acquire that took effect between its attempt's start and its
// return, and a release that took effect between the holder's release call
// and its return, or at the validity deadline if that came first: the lock
// promises nothing after it. The history is cut into segments where no
// grant is in progress, which are checked separately; each segment that is
// not linearizable is one violation. It also returns how many segments the
// checker could not decide in time. start is the run's start, for the
// times in the violations' details.
func CheckLinearizable(grants []Grant, start int64) (violations []Violation, unknown int) {
	clock := relClock(start)
	for _, seg := range segments(grants) {
		ops := make([]porcupine.Operation, 0, 2*len(seg))
		for _, g := range seg {
			w := workerIndex(g.Worker)
			relCall, relReturn := g.End(), g.End()
			if g.Released != 0 && g.Released < g.Deadline {
				relReturn = min(g.ReleaseDone, g.Deadline)
			}
			ops = append(ops,
				porcupine.Operation{ClientId: w, Input: mutexInput{worker: w}, Call: g.Invoke, Return: g.Granted},
				porcupine.Operation{ClientId: w, Input: mutexInput{release: true, worker: w}, Call: relCall, Return: relReturn},
			)
		}
		switch porcupine.CheckOperationsTimeout(mutexModel, ops, linearizeTimeout) {
		case porcupine.Illegal:
			start, end := seg[0].Invoke, seg[0].End()
			workers := map[string]bool{}
			for _, g := range seg {
				end = max(end, g.End())
				workers[g.Worker] = true
			}
			violations = append(violations, Violation{
				Checker: Linearizable, Start: start, End: end, Workers: sortedKeys(workers),
				Detail: fmt.Sprintf("the %d grants from %s to %s cannot be ordered as a mutex allows", len(seg), clock.at(start), clock.at(end)),
			})
		case porcupine.Unknown:
			unknown++
		}
	}
	return violations, unknown
}

// segments cuts grants (ordered by grant time) into groups such that every
// grant of a group starts after all grants of the groups before it ended.
func segments(grants []Grant) [][]Grant {
	byInvoke := append([]Grant(nil), grants...)
	sort.SliceStable(byInvoke, func(i, j int) bool { return byInvoke[i].Invoke < byInvoke[j].Invoke })
	var out [][]Grant
	var cur []Grant
	var reach int64
	for _, g := range byInvoke {
		if len(cur) > 0 && g.Invoke > reach {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, g)
		end := g.End()
		if g.Released != 0 && g.Released < g.Deadline {
			end = min(g.ReleaseDone, g.Deadline)
		}
		reach = max(reach, end)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// workerIndex returns i for "worker-<i>", or -2 for anything else (never
// equal to free, nor to a real worker).
func workerIndex(name string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(name, "worker-"))
	if err != nil || !strings.HasPrefix(name, "worker-") {
		return -2
	}
	return i
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

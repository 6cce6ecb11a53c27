package scenario_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/torture/faults"
	"github.com/redlock-go/redlock/torture/scenario"
)

// Every row states a bound on waiting and how it is derived; a row with
// faults holds to it outside them only; a waiting worker gives up only
// past the bound, so that a give-up is a wait past it.
func TestTable_everyRowStatesABoundOnWaiting(t *testing.T) {
	for _, s := range scenario.Table() {
		b := s.Liveness()
		if !b.Stated() || b.Derivation == "" {
			t.Errorf("%s: bound %+v: want one stated, with its derivation", s.Name, b)
		}
		if faulted := len(s.WithDefaults().Faults()) > 0; b.FaultFree != faulted || faulted && b.Recovery <= 0 {
			t.Errorf("%s: fault-free %v, recovery %v; want fault-free, with a recovery, exactly when the row has faults",
				s.Name, b.FaultFree, b.Recovery)
		}
		if b.Loops == s.Wait {
			t.Errorf("%s: loops %v for a row that waits %v", s.Name, b.Loops, s.Wait)
		}
		if s.Wait && s.WaitFor() <= b.Wait {
			t.Errorf("%s: workers give up after %v, within the bound of %v", s.Name, s.WaitFor(), b.Wait)
		}
	}
}

// The bounds follow from the rows' holds, waiters and retry policy.
func TestScenario_Liveness_derivation(t *testing.T) {
	table := scenario.Table()
	for name, want := range map[string]time.Duration{
		// Seven other waiters of two clients, each turn a hold of 5 ms
		// think and 20 ms and a round of 50 ms: then the 200 ms retry
		// pause and a 300 ms stall.
		"no-faults/handoff": 7*75*time.Millisecond + 500*time.Millisecond,
		// 23 other waiters of six clients, three permits: eight turns, then
		// the pause behind two clients, 1 s.
		"semaphore/no-faults/handoff": 8*75*time.Millisecond + 1300*time.Millisecond,
		// Twelve writers' turns and the readers': a reader waits for the
		// writers queued before it, which wait for the readers before them.
		"rwlock/no-faults/handoff": 13*75*time.Millisecond + 1300*time.Millisecond,
		// 23 other waiters, each holding up to three names (5 ms + 3 × 20
		// ms).
		"multikey/no-faults/handoff": 23*115*time.Millisecond + 1300*time.Millisecond,
		// One writer's turn and the readers' ahead at most: then the 200
		// ms retry pause.
		"liveness/rwlock-one-client": 2*75*time.Millisecond + 500*time.Millisecond,
		// Fifteen other waiters of 8 clients, each holding three names
		// (5 ms + 3 × 20 ms): the pause behind two clients, 1 s.
		"liveness/multikey-random-3-of-10": 15*115*time.Millisecond + 1300*time.Millisecond,
		// Seven other waiters, three permits: three turns.
		"liveness/semaphore-one-client": 3*75*time.Millisecond + 500*time.Millisecond,
		// Five other waiters of five clients, each holding up to 600 ms,
		// then a renewal of the place in line: not the 6 to 12 s retry
		// pause.
		"liveness/long-retry-pause": 5*670*time.Millisecond + 1300*time.Millisecond,
		// The same, a drop of the subscriptions costing a second more.
		"liveness/long-retry-pause-dropped-subscriptions": 5*670*time.Millisecond + 1300*time.Millisecond,
		// Loops: ten rounds of a 50 ms attempt and a 10 ms pause, and a
		// stall.
		"liveness/try-crowd-64": 900 * time.Millisecond,
	} {
		s, err := scenario.Select(table, "^"+name+"$")
		if err != nil {
			t.Fatal(err)
		}
		if got := s[0].Liveness().Wait; got != want {
			t.Errorf("%s: bound %v, want %v (%s)", name, got, want, s[0].Liveness().Derivation)
		}
	}
}

// livenessShapes are the loads the liveness rows are named for, in order:
// what each row must be, and a check of it.
var livenessShapes = []struct {
	name, want string
	is         func(s scenario.Scenario) bool
}{
	{"liveness/try-crowd-64", "64 processes looping TryAcquire, whose start counts as a fault for 640ms", func(s scenario.Scenario) bool {
		return s.Workers == 64 && !s.Wait && s.Goroutines <= 1 && s.Liveness().Settle == 640*time.Millisecond
	}},
	{"liveness/rwlock-one-client", "readers and a writer waiting in one client", func(s scenario.Scenario) bool {
		return s.Workers == 1 && s.Wait && s.ReaderGoroutines >= 1 && s.ReaderGoroutines < s.Goroutines
	}},
	{"liveness/semaphore-one-client", "more waiters than permits in one client", func(s scenario.Scenario) bool {
		return s.Workers == 1 && s.Wait && s.Limit >= 1 && s.Goroutines > s.Limit
	}},
	{"liveness/long-retry-pause", "several clients waiting with retry pauses past a place's and a mark's life", func(s scenario.Scenario) bool {
		return s.Workers >= 3 && s.Wait && s.RetryPause/2 > 3*time.Second
	}},
	{"liveness/long-retry-pause-dropped-subscriptions", "the long retry pauses, every subscription dropped now and then", func(s scenario.Scenario) bool {
		b := s.Liveness()
		return s.Workers >= 3 && s.Wait && s.RetryPause/2 > 3*time.Second && b.Costs[faults.KindDropSubscriptions] == time.Second
	}},
	{"liveness/stranded-waiter", "several clients waiting, holders killed and waiters stopped past a place's life", func(s scenario.Scenario) bool {
		b := s.Liveness()
		return s.Workers >= 6 && s.Wait && b.Costs[faults.KindKillHolder] == 2*time.Second && b.Costs[faults.KindStopWaiter] == 2*time.Second &&
			s.WaitFor() >= b.Wait+2*time.Second+s.WithDefaults().TTL
	}},
	{"liveness/semaphore-dead-first-waiter", "clients waiting for a semaphore, the one first in line killed now and then", func(s scenario.Scenario) bool {
		b := s.Liveness()
		return s.Workers >= 6 && s.Wait && s.Limit > 1 && b.Costs[faults.KindKillWaiter] > 0 && b.Costs[faults.KindKillWaiter] < time.Second
	}},
	{"liveness/semaphore-two-dead-first-waiters", "clients waiting for a semaphore, the two first in line killed together now and then", func(s scenario.Scenario) bool {
		b := s.Liveness()
		k, ok := s.Faults()[0].(faults.KillFirstWaiter)
		return s.Workers >= 6 && s.Wait && s.Limit > 1 && ok && k.Together == 2 && b.Costs[faults.KindKillWaiter] > 0 &&
			b.Costs[faults.KindKillWaiter] < time.Second
	}},
	{"liveness/multikey-random-3-of-10", "8 clients of two goroutines waiting for 3 of 10 names", func(s scenario.Scenario) bool {
		return s.Workers == 8 && s.Goroutines == 2 && s.Wait && s.Pick == 3 && len(s.Names(0, "k")) == 10
	}},
}

// The rows built to find waiters that wait for ever run the loads they
// are named for, each with a bound and a least share served, fault-free
// but for faults that leave waiting bounded, if longer (Bound.Costs).
func TestTable_livenessRows(t *testing.T) {
	rows, err := scenario.Select(scenario.Table(), "^liveness/")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(livenessShapes) {
		t.Fatalf("%d liveness rows, want %d", len(rows), len(livenessShapes))
	}
	for i, s := range rows {
		b := s.Liveness()
		if len(s.WithDefaults().Faults()) > 0 && len(b.Costs) == 0 || b.Wait <= 0 || b.MinServed <= 0 {
			t.Errorf("%s: bound %+v; want no faults but costly ones, a bound on waits and a least share served, for every waiter", s.Name, b)
		}
		if d := s.WithDefaults().Duration; d < 10*time.Second || d > 20*time.Second {
			t.Errorf("%s: runs %v, want 10 to 20 s", s.Name, d)
		}
		if shape := livenessShapes[i]; s.Name != shape.name || !shape.is(s) {
			t.Errorf("row %d: %s, want %s: %s", i, s.Name, shape.name, shape.want)
		}
	}
}

// A row's faults that leave waiting bounded do not count as faults.
func TestScenario_Liveness_harmlessFaults(t *testing.T) {
	for name, want := range map[string]string{"restart-quarantine": "split", "skew-within-drift": "clock-skew", "minority-kill": ""} {
		s, err := scenario.Select(scenario.Table(), "^"+name+"$")
		if err != nil {
			t.Fatal(err)
		}
		b := s[0].Liveness()
		if got := strings.Join(b.Ignore, ","); got != want {
			t.Errorf("%s: ignores %q, want %q", name, got, want)
		}
	}
}

package check_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

// waiting is the bound of the hand-made histories of waiters in Acquire:
// 100 ms, every acquisition served.
var waiting = check.Bound{Wait: 100 * time.Millisecond, MinServed: 1}

// readersAndWriter records readers, goroutines of worker-1, taking the lock in turn,
// overlapping, every 20 ms from 0 to 600 ms, and worker-0, a writer of the
// same name, waiting in Acquire from 5 ms: granted at writerGranted after
// the readers stop at readersUntil, or giving up at 500 ms when
// writerGranted is 0.
func readersAndWriter(readersUntil, writerGranted int64) *builder {
	b := newBuilder()
	for t := int64(0); t < readersUntil; t += 20 * ms {
		b.read(fmt.Sprintf("worker-1.%d", t/(20*ms)%2), t, t+1*ms, t+500*ms, t+30*ms, t+31*ms, uint64(t/ms+1))
	}
	if writerGranted == 0 {
		b.op("worker-0", history.OpAcquire, 5*ms, 500*ms, history.Fail, nil)
		return b
	}
	b.grant("worker-0", 5*ms, writerGranted, writerGranted+500*ms, writerGranted+5*ms, writerGranted+6*ms, 1000)
	return b
}

// liveness checks b's history against bound and returns what was found.
func liveness(t *testing.T, b *builder, bound check.Bound) check.Result {
	t.Helper()
	return check.Check(b.sorted(), 0, bound)
}

// wantStarved fails t unless r has want liveness violations, the first of
// whose details contains each of details.
func wantStarved(t *testing.T, r check.Result, want int, details ...string) {
	t.Helper()
	var found []string
	for _, v := range r.Violations {
		if v.Checker == check.Liveness {
			found = append(found, v.Detail)
		}
	}
	if len(found) != want || r.Count(check.Liveness) != want {
		t.Fatalf("%d liveness violations (count %d), want %d:\n%s", len(found), r.Count(check.Liveness), want, strings.Join(found, "\n"))
	}
	for _, d := range details {
		if !strings.Contains(found[0], d) {
			t.Errorf("detail %q lacks %q", found[0], d)
		}
	}
}

// A writer that readers keep overtaking until it gives up fails the
// check: it waited past the bound, and was not served.
func TestCheckLiveness_starvedWaiterFails(t *testing.T) {
	r := liveness(t, readersAndWriter(600*ms, 0), waiting)
	wantStarved(t, r, 2, "worker-0 (writer) waited 495 ms", "until it gave up at +0.500s", "past the bound of 100 ms")
	if !r.Applicable[check.Liveness] || r.Waits.Longest != 495*time.Millisecond || r.Waits.Waiter != "worker-0" {
		t.Fatalf("applicable %v, longest wait %v by %q; want true, 495ms by worker-0",
			r.Applicable[check.Liveness], r.Waits.Longest, r.Waits.Waiter)
	}
	if share := r.Waits.Share(); share >= 1 || r.Waits.Acquisitions != 31 || r.Waits.Served != 30 {
		t.Fatalf("%d of %d served (%v), want 30 of 31", r.Waits.Served, r.Waits.Acquisitions, share)
	}
	if d := r.Violations[len(r.Violations)-1].Detail; !strings.Contains(d, "30 of 31 acquisitions served (96.7%), below the least share of 100%") {
		t.Errorf("share detail %q", d)
	}
}

// The same writer, let in once the readers it found holding are gone,
// passes; so does any history with a bound that states nothing.
func TestCheckLiveness_servedWaiterPasses(t *testing.T) {
	r := liveness(t, readersAndWriter(40*ms, 75*ms), waiting)
	wantStarved(t, r, 0)
	wantCounts(t, r, [5]int{})
	if r.Waits.Longest != 70*time.Millisecond || r.Waits.Share() != 1 {
		t.Fatalf("longest wait %v, share %v; want 70ms, 1", r.Waits.Longest, r.Waits.Share())
	}
	r = liveness(t, readersAndWriter(600*ms, 0), check.Bound{Derivation: "none"})
	wantStarved(t, r, 0)
	if r.Applicable[check.Liveness] || r.Waits.Longest != 495*time.Millisecond {
		t.Fatalf("applicable %v, longest %v; want false, measured all the same", r.Applicable[check.Liveness], r.Waits.Longest)
	}
}

// A wait that a fault touches is left out when the bound holds outside
// faults only, up to Recovery after the fault's end.
func TestCheckLiveness_faultFreeBoundLeavesOutWhatFaultsTouch(t *testing.T) {
	bound := waiting
	bound.FaultFree, bound.Recovery = true, 50*time.Millisecond
	for _, tc := range []struct {
		name         string
		from, to     int64
		starved, out int
	}{
		// The writer, and the readers from 100 ms to 240 ms.
		{"during", 100 * ms, 200 * ms, 0, 9},
		// A fault ending at 1 ms reaches 51 ms: the writer, and the
		// readers at 0, 20 and 40 ms.
		{"recovering", 0, 1 * ms, 0, 4},
		{"after", 700 * ms, 800 * ms, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := readersAndWriter(600*ms, 0)
			b.events = append(b.events,
				history.Event{Time: tc.from, Process: history.ProcNemesis, Type: history.Start, Op: "kill", ID: 1, Target: "n1"},
				history.Event{Time: tc.to, Process: history.ProcNemesis, Type: history.End, Op: "kill", ID: 1, Target: "n1"})
			r := liveness(t, b, bound)
			wantStarved(t, r, tc.starved)
			if r.Waits.Outside != tc.out || r.Waits.Measured != 31-tc.out {
				t.Fatalf("%d acquisitions left out, %d measured; want %d, %d", r.Waits.Outside, r.Waits.Measured, tc.out, 31-tc.out)
			}
		})
	}
	// The first 45 ms of the history settle: the writer, and the readers
	// at 0, 20 and 40 ms, are left out.
	settling := waiting
	settling.Settle = 45 * time.Millisecond
	r := liveness(t, readersAndWriter(600*ms, 0), settling)
	wantStarved(t, r, 0)
	if r.Waits.Outside != 4 {
		t.Fatalf("%d acquisitions left out as the nodes settle, want 4", r.Waits.Outside)
	}
	// A process whose first call comes at 85 ms stretches the settling to
	// it: the readers at 60 and 80 ms are left out too.
	late := readersAndWriter(600*ms, 0)
	late.op("worker-2", history.OpRead, 85*ms, 86*ms, history.OK, nil)
	r = liveness(t, late, settling)
	wantStarved(t, r, 0)
	if r.Waits.Outside != 6 {
		t.Fatalf("%d acquisitions left out until every process started, want 6", r.Waits.Outside)
	}
}

// A fault of a kind in Costs does not leave out the calls it touches: they
// are held to the bound plus its cost, but for the calls of the process it
// hit, which are left out.
func TestCheckLiveness_costlyFaultsLengthenTheBound(t *testing.T) {
	bound := waiting
	bound.FaultFree, bound.Recovery = true, 50*time.Millisecond
	bound.Costs = map[string]time.Duration{"kill-holder": 300 * time.Millisecond}
	// worker-0 holds from 1 ms and is killed at 10 ms, holding: it never
	// releases, and its next call never returns, waiting past any bound.
	// worker-1 waits from 5 ms for its grant at granted.
	stranded := func(granted int64) *builder { return diesHolding("kill-holder", 500*ms, granted, 801*ms) }
	r := liveness(t, stranded(395*ms), bound)
	wantStarved(t, r, 0)
	if r.Waits.Outside != 1 || r.Waits.Measured != 2 || r.Waits.Longest != 390*time.Millisecond {
		t.Fatalf("%d left out, %d measured, longest %v; want the killed holder's call left out, 2 measured, 390ms",
			r.Waits.Outside, r.Waits.Measured, r.Waits.Longest)
	}
	wantStarved(t, liveness(t, stranded(420*ms), bound), 1, "worker-1 waited 415 ms",
		"past the bound of 400 ms (100 ms, and 300 ms for the kill-holder of worker-0 at +0.010s)")
	// Not in Costs, the same fault leaves out every call it touches.
	bound.Costs = nil
	r = liveness(t, stranded(420*ms), bound)
	wantStarved(t, r, 0)
	if r.Waits.Outside != 2 {
		t.Fatalf("%d left out, want worker-0's second call and worker-1's", r.Waits.Outside)
	}
}

// diesHolding records worker-0 granted the lock from 1 ms to deadline and
// killed at 10 ms by a fault of kind, holding it: it never releases, and
// its next call, from 9 ms, never returns. worker-1 waits from 5 ms for
// its grant at granted. The history ends at end.
func diesHolding(kind string, deadline, granted, end int64) *builder {
	b := newBuilder()
	b.grant("worker-0", 0, 1*ms, deadline, 0, 0, 1)
	b.op("worker-0", history.OpAcquire, 9*ms, 0, "", nil)
	b.grant("worker-1", 5*ms, granted, granted+500*ms, granted+5*ms, granted+6*ms, 2)
	b.events = append(b.events, history.Event{Time: 10 * ms, Process: history.ProcNemesis, Type: history.Info,
		Op: kind, ID: 1, Target: "worker-0"})
	b.op("worker-2", history.OpRead, end-1*ms, end, history.OK, nil)
	return b
}

// Readers are held to the bound as writers are.
func TestCheckLiveness_readers(t *testing.T) {
	b := newBuilder()
	b.op("worker-1", history.OpAcquire, 0, 400*ms, history.Fail, func(ev *history.Event) { ev.Shared = true })
	b.grant("worker-0", 0, 1*ms, 500*ms, 10*ms, 11*ms, 1)
	wantStarved(t, liveness(t, b, waiting), 2, "worker-1 (reader) waited 400 ms")
}

// A call that never returned waited until the end of the history.
func TestCheckLiveness_callStillWaitingAtTheEnd(t *testing.T) {
	b := newBuilder()
	b.grant("worker-0", 0, 1*ms, 500*ms, 300*ms, 301*ms, 1)
	b.op("worker-1", history.OpAcquire, 2*ms, 0, "", nil)
	wantStarved(t, liveness(t, b, waiting), 2, "worker-1 waited 299 ms", "still waiting when the history ended at +0.301s")
}

// looping is the bound of the hand-made histories of workers that loop
// TryAcquire: the lock free for at most 50 ms while one tries.
var looping = check.Bound{Loops: true, Wait: 50 * time.Millisecond}

// A worker looping TryAcquire waits, as the bound counts it, only while
// the lock is free: refused for long while others hold it, it passes; the
// lock left free for long while it tries, it fails.
func TestCheckLiveness_loopsAreHeldToTheFreeLock(t *testing.T) {
	b := newBuilder()
	// worker-0 holds the lock from 1 to 200 ms; worker-1 tries every 10
	// ms from 0 and gets it 20 ms after the release: 20 ms free.
	b.grant("worker-0", 0, 1*ms, 500*ms, 200*ms, 201*ms, 1)
	for t := int64(0); t < 220*ms; t += 10 * ms {
		b.fail("worker-1", t, t+2*ms)
	}
	b.grant("worker-1", 220*ms, 221*ms, 700*ms, 230*ms, 231*ms, 2)
	r := liveness(t, b, looping)
	wantStarved(t, r, 0)
	if r.Waits.Longest != 21*time.Millisecond || r.Waits.Acquisitions != 2 || r.Waits.Served != 2 {
		t.Fatalf("longest %v, %d of %d served; want 21ms, 2 of 2", r.Waits.Longest, r.Waits.Served, r.Waits.Acquisitions)
	}

	// worker-2 then tries from 240 ms to 400 ms and nobody gets the lock:
	// it was free 160 ms while worker-2 tried, and the run ended.
	for t := int64(240 * ms); t < 400*ms; t += 10 * ms {
		b.fail("worker-2", t, t+2*ms)
	}
	r = liveness(t, b, looping)
	wantStarved(t, r, 1, "worker-2 tried for  from +0.240s in 16 attempts", "the lock was free for it for 152 ms, from +0.240s until its last attempt ended at +0.392s")
	if r.Waits.Served != 2 || r.Waits.Acquisitions != 3 {
		t.Fatalf("%d of %d runs served; want 2 of 3, the last cut short", r.Waits.Served, r.Waits.Acquisitions)
	}
}

// A looping worker waits for a semaphore while all its permits are held,
// and for a set while any of its names is; a reader only while a writer
// holds.
func TestCheckLiveness_whatIsFreeForWhom(t *testing.T) {
	sem := semaphore{name: "s", limit: 2}
	tries := func(b *builder, worker string, set func(*history.Event)) {
		for t := int64(0); t < 200*ms; t += 10 * ms {
			b.op(worker, history.OpAcquire, t, t+2*ms, history.Fail, set)
		}
	}
	for _, tc := range []struct {
		name    string
		history func(b *builder)
		starved int
	}{
		{"semaphore full", func(b *builder) {
			b.hold("worker-0", sem, 1, 0, 1*ms, 500*ms, 300*ms, 301*ms, 1)
			b.hold("worker-1", sem, 2, 0, 1*ms, 500*ms, 300*ms, 301*ms, 1)
			tries(b, "worker-2", func(ev *history.Event) { ev.Key, ev.Limit = "s", 2 })
		}, 0},
		{"permit free", func(b *builder) {
			b.hold("worker-0", sem, 1, 0, 1*ms, 500*ms, 300*ms, 301*ms, 1)
			tries(b, "worker-2", func(ev *history.Event) { ev.Key, ev.Limit = "s", 2 })
		}, 1},
		{"set's name held", func(b *builder) {
			b.holdAll("worker-0", []string{"b"}, 0, 1*ms, 500*ms, 300*ms, 301*ms, 1)
			tries(b, "worker-2", func(ev *history.Event) { ev.Names = []string{"a", "b"} })
		}, 0},
		{"set free", func(b *builder) {
			b.holdAll("worker-0", []string{"c"}, 0, 1*ms, 500*ms, 300*ms, 301*ms, 1)
			tries(b, "worker-2", func(ev *history.Event) { ev.Names = []string{"a", "b"} })
		}, 1},
		{"reader beside readers", func(b *builder) {
			b.read("worker-0", 0, 1*ms, 500*ms, 300*ms, 301*ms, 1)
			tries(b, "worker-2", func(ev *history.Event) { ev.Shared = true })
		}, 1},
		{"writer beside a reader", func(b *builder) {
			b.read("worker-0", 0, 1*ms, 500*ms, 300*ms, 301*ms, 1)
			tries(b, "worker-2", nil)
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.history(b)
			wantStarved(t, liveness(t, b, looping), tc.starved)
		})
	}
}

// A loop that a fault of a kind in Costs touches is held to the bound
// plus its cost over the stretches in which the lock was free for it,
// rather than only outside the fault: a leader killed while it leads
// leaves the lock to expire, and the next is held to how long it stays
// free past that expiry.
func TestCheckLiveness_costlyFaultsLengthenTheLoopsBound(t *testing.T) {
	bound := looping
	bound.FaultFree, bound.Recovery = true, 50*time.Millisecond
	bound.Costs = map[string]time.Duration{"kill-leader": 200 * time.Millisecond}
	// worker-0 leads from 1 ms until 100 ms and is killed at 10 ms: it
	// never releases, and its next campaign never returns. worker-1
	// campaigns from 5 ms until it leads at granted.
	killed := func(granted int64) *builder { return diesHolding("kill-leader", 100*ms, granted, 901*ms) }
	r := liveness(t, killed(300*ms), bound)
	wantStarved(t, r, 0)
	if r.Waits.Outside != 1 || r.Waits.Longest != 200*time.Millisecond {
		t.Fatalf("%d left out, longest %v; want the killed leader's campaign left out, 200ms", r.Waits.Outside, r.Waits.Longest)
	}
	wantStarved(t, liveness(t, killed(400*ms), bound), 1, "the lock was free for it for 300 ms, from +0.100s",
		"past the bound of 250 ms (50 ms, and 200 ms for the kill-leader of worker-0 at +0.010s)")
}

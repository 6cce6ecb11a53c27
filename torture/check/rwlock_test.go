package check_test

import (
	"strings"
	"testing"

	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

// rwClean is a correct history of a read-write lock: two readers hold it
// together, a writer takes it after both, a reader after the writer's
// release call and another after its validity ended; every grant's fence
// is above those of the grants before it, readers' and writers' alike.
func rwClean() *builder {
	b := newBuilder()
	b.read("worker-1", 1*ms, 2*ms, 500*ms, 10*ms, 11*ms, 10)
	b.read("worker-2", 1*ms, 3*ms, 500*ms, 12*ms, 13*ms, 20)
	b.fail("worker-0", 4*ms, 5*ms) // readers hold it
	b.grant("worker-0", 12*ms, 13*ms+500_000, 500*ms, 20*ms, 21*ms, 30)
	b.write("worker-0", 16*ms, -1, 30)
	b.read("worker-1", 19*ms, 20*ms+500_000, 500*ms, 25*ms, 26*ms, 40)
	b.grant("worker-3", 30*ms, 31*ms, 50*ms, 70*ms, 71*ms, 50) // expires at 50 ms
	b.write("worker-3", 40*ms, -1, 50)
	b.read("worker-2", 50*ms, 51*ms, 550*ms, 60*ms, 61*ms, 60)
	return b
}

func TestCheck_readersHoldTogether(t *testing.T) {
	r := rwClean().check(t)
	wantCounts(t, r, [5]int{})
	if r.Grants != 6 || r.Writes != 2 {
		t.Fatalf("Grants = %d, Writes = %d; want 6, 2", r.Grants, r.Writes)
	}
	// The same history with the readers' grants taken as writers' is
	// caught: it is their kind that lets them overlap.
	b := rwClean()
	for i := range b.events {
		b.events[i].Shared = false
	}
	wantCounts(t, b.check(t), [5]int{1, 1, 0, 0, 0})
}

func TestCheck_writerWhileAReaderHoldsIsCaught(t *testing.T) {
	b := rwClean()
	// worker-4 writes while worker-2 reads (51-60 ms).
	b.grant("worker-4", 54*ms, 55*ms, 555*ms, 58*ms, 59*ms, 70)
	r := b.check(t)
	wantCounts(t, r, [5]int{1, 1, 0, 0, 0})
	for _, v := range r.Violations {
		if v.Checker == check.Overlap && (strings.Join(v.Workers, ",") != "worker-2,worker-4" ||
			!strings.Contains(v.Detail, "while worker-2 held it shared")) {
			t.Fatalf("overlap %v: %s; want worker-4 granted while worker-2 held it shared", v.Workers, v.Detail)
		}
	}
}

func TestCheck_readerWhileAWriterHoldsIsCaught(t *testing.T) {
	b := rwClean()
	// worker-4 reads while worker-0 writes (13.5-20 ms).
	b.read("worker-4", 14*ms, 15*ms, 515*ms, 17*ms, 18*ms, 35)
	r := b.check(t)
	wantCounts(t, r, [5]int{1, 1, 0, 0, 0})
	for _, v := range r.Violations {
		if v.Checker == check.Overlap && !strings.HasPrefix(v.Detail, "worker-4 was granted the lock shared at +0.015s") {
			t.Fatalf("overlap detail %q", v.Detail)
		}
	}
}

func TestCheck_readerReleasedTwiceInTheModelIsCaught(t *testing.T) {
	// worker-1's second read returns (6 ms) before its first read's
	// release was even called (8 ms): one reader holding twice, which the
	// read-write lock model refuses, although readers may overlap.
	b := newBuilder()
	b.read("worker-1", 0, 1*ms, 500*ms, 8*ms, 9*ms, 1)
	b.op("worker-1", history.OpAcquire, 5*ms, 6*ms, history.OK, func(ev *history.Event) {
		ev.Token, ev.Fence, ev.Deadline, ev.Shared = "second", 2, 500*ms, true
	})
	b.op("worker-1", history.OpRelease, 10*ms, 11*ms, history.OK, func(ev *history.Event) { ev.Token = "second" })
	wantCounts(t, b.check(t), [5]int{1, 0, 0, 0, 0})
}

func TestCheck_fenceOrderSpansReadersAndWriters(t *testing.T) {
	b := rwClean()
	// A reader after the last reader's grant (fence 60), with fence 50.
	b.read("worker-1", 62*ms, 63*ms, 563*ms, 65*ms, 66*ms, 50)
	wantCounts(t, b.check(t), [5]int{0, 0, 0, 0, 1})
	b = rwClean()
	// A writer after the readers, with a fence below theirs.
	b.grant("worker-0", 62*ms, 63*ms, 563*ms, 65*ms, 66*ms, 40)
	wantCounts(t, b.check(t), [5]int{0, 0, 0, 0, 1})
}

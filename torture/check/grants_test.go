package check_test

import (
	"testing"

	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

// withTTL reports ttl on every granted acquisition of b's history, as a
// worker that does not renew its locks does.
func withTTL(b *builder, ttl int64) {
	for i, ev := range b.events {
		if ev.Op == history.OpAcquire && ev.Type == history.OK {
			b.events[i].TTL = ttl
		}
	}
}

// A grant that reports its TTL was taken no earlier than its deadline less
// the TTL, however long the call waited before its last attempt; one that
// does not report it (a renewed lock, whose deadline moves) from the call's
// start. Since never passes the grant's return.
func TestGrants_sinceIsTheDeadlineLessTheTTL(t *testing.T) {
	b := newBuilder()
	b.grant("worker-0", 0, 300*ms, 790*ms, 400*ms, 401*ms, 1)       // waited 300 ms: since 290 ms
	b.grant("worker-1", 350*ms, 410*ms, 800*ms, 420*ms, 421*ms, 2)  // deadline less TTL before the call: its start
	b.grant("worker-2", 500*ms, 510*ms, 1200*ms, 520*ms, 521*ms, 3) // a deadline past a TTL: its return
	b.holdAll("worker-3", []string{"a", "b"}, 0, 600*ms, 1090*ms, 700*ms, 701*ms, 4, 5)
	withTTL(b, 500*ms)
	got := check.Grants(history.Ops(b.sorted()))
	want := map[string]int64{"worker-0": 290 * ms, "worker-1": 350 * ms, "worker-2": 510 * ms, "worker-3": 590 * ms}
	for _, g := range got {
		if g.Since != want[g.Worker] {
			t.Errorf("%s (%s): Since = %d ms, want %d ms", g.Worker, g.Key, g.Since/ms, want[g.Worker]/ms)
		}
	}
	withTTL(b, 0)
	for _, g := range check.Grants(history.Ops(b.sorted())) {
		if g.Since != g.Invoke {
			t.Errorf("%s without a TTL: Since = %d ms, want its call's start, %d ms", g.Worker, g.Since/ms, g.Invoke/ms)
		}
	}
}

// A call that waited through others' grants, and whose lock was taken
// while another held it, is still caught with its TTL reported.
func TestCheck_aGrantWithItsTTLWhileAnotherHoldsIsCaught(t *testing.T) {
	b := newBuilder()
	b.grant("worker-0", 0, 10*ms, 500*ms, 100*ms, 101*ms, 1)
	b.grant("worker-1", 1*ms, 20*ms, 510*ms, 40*ms, 41*ms, 2) // taken at 10 ms or later, worker-0 holds to 100 ms
	b.grant("worker-2", 2*ms, 120*ms, 610*ms, 130*ms, 131*ms, 3)
	withTTL(b, 500*ms)
	r := b.check(t)
	if r.Count(check.Linearizable) != 1 || r.Count(check.Overlap) != 1 || r.Unknown != 0 {
		t.Fatalf("linearizable %d, overlap %d, unknown %d; want 1, 1, 0", r.Count(check.Linearizable), r.Count(check.Overlap), r.Unknown)
	}
}

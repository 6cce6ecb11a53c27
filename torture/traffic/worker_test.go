package traffic

import (
	"bytes"
	"context"
	"maps"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/torture/check"
	"github.com/redlock-go/redlock/torture/history"
)

// A worker with a Limit takes permits of the key, records the permit it
// holds on each grant and the limit on each attempt, and updates the
// register of the permit it holds.
func TestRun_semaphoreWorkerHoldsPermitsAndTheirRegisters(t *testing.T) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	rec := history.NewRecorder(nil)
	reg, err := StartRegister(Unfenced, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	cfg := Config{
		Name: "worker-0", Nodes: nodes.URLs(), Register: reg.URL(), Key: "sem", Limit: 2,
		TTL: 500 * time.Millisecond, DisableQuarantine: true, Goroutines: 3,
		ThinkMin: 2 * time.Millisecond, ThinkMax: 5 * time.Millisecond, RetryMax: 2 * time.Millisecond,
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	if err := Run(ctx, cfg, &out); err != nil {
		t.Fatal(err)
	}
	events, err := history.Read(&out)
	if err != nil {
		t.Fatal(err)
	}
	events = append(events, rec.Events()...)
	history.Sort(events)
	r := check.Check(events, 0)
	if r.Total(check.Kinds) != 0 || !r.Applicable[check.OverLimit] || r.Writes == 0 {
		t.Fatalf("violations %v, over-limit applicable %v, %d writes; want none, true, some", r.Counts, r.Applicable[check.OverLimit], r.Writes)
	}
	held := map[string]bool{}
	for _, g := range check.Grants(history.Ops(events)) {
		if g.Name != "sem" || g.Limit != 2 {
			t.Fatalf("grant of %q with limit %d, want sem and 2", g.Name, g.Limit)
		}
		held[g.Key] = true
	}
	written := map[string]bool{}
	for _, ev := range events {
		if ev.Process == history.ProcRegister && ev.Op == history.OpWrite {
			written[ev.Key] = true
		}
	}
	want := map[string]bool{"sem:permit:1": true, "sem:permit:2": true}
	if !maps.Equal(held, want) || !maps.Equal(written, want) {
		t.Fatalf("held %v, wrote the registers %v; want both permits", held, written)
	}
}

package traffic

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"sync"
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
	r := check.Check(events, 0, check.Bound{})
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
		// A lock that is not renewed reports its TTL on its grant: the
		// check counts it taken no earlier than its deadline less the TTL.
		if ev.Op == history.OpAcquire && ev.Type == history.OK && ev.TTL != int64(cfg.TTL) {
			t.Fatalf("grant %+v reports TTL %d, want %d", ev, ev.TTL, int64(cfg.TTL))
		}
		if ev.Process == history.ProcRegister && ev.Op == history.OpWrite {
			written[ev.Key] = true
		}
	}
	want := map[string]bool{"sem:permit:1": true, "sem:permit:2": true}
	if !maps.Equal(held, want) || !maps.Equal(written, want) {
		t.Fatalf("held %v, wrote the registers %v; want both permits", held, written)
	}
}

// runWorkers runs the workers cfgs at once against one register for d, and
// returns the history of all, sorted, with the register's.
func runWorkers(t *testing.T, d time.Duration, cfgs ...Config) []history.Event {
	t.Helper()
	rec := history.NewRecorder(nil)
	reg, err := StartRegister(Unfenced, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	outs := make([]bytes.Buffer, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		cfg.Register = reg.URL()
		wg.Go(func() { errs[i] = Run(ctx, cfg, &outs[i]) })
	}
	wg.Wait()
	events := rec.Events()
	for i := range cfgs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		evs, err := history.Read(&outs[i])
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, evs...)
	}
	history.Sort(events)
	return events
}

// Readers take the key shared and write nothing; writers take it alone
// and update its register. Both kinds are recorded as such.
func TestRun_readersAndWritersOfOneKey(t *testing.T) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	base := Config{
		Nodes: nodes.URLs(), Key: "rw", TTL: 500 * time.Millisecond, DisableQuarantine: true, Goroutines: 2,
		ThinkMin: 2 * time.Millisecond, ThinkMax: 5 * time.Millisecond, RetryMax: 2 * time.Millisecond,
	}
	writer, reader := base, base
	writer.Name, reader.Name, reader.Shared = "worker-0", "worker-1", true
	events := runWorkers(t, 500*time.Millisecond, writer, reader)
	if r := check.Check(events, 0, check.Bound{}); r.Total(check.Kinds) != 0 || r.Writes == 0 {
		t.Fatalf("violations %v, %d writes; want none, some", r.Counts, r.Writes)
	}
	kinds := map[string]bool{}
	for _, g := range check.Grants(history.Ops(events)) {
		if g.Shared != strings.HasPrefix(g.Worker, "worker-1.") || g.Key != "rw" {
			t.Fatalf("grant %+v: want the readers', and only theirs, shared, of rw", g)
		}
		kinds[g.Worker[:8]] = true
	}
	for _, ev := range events {
		if ev.Process == history.ProcRegister && (ev.Shared != strings.HasPrefix(ev.Worker, "worker-1.") ||
			ev.Op == history.OpWrite && ev.Shared) {
			t.Fatalf("register event %+v: want reads only, marked shared, from the readers", ev)
		}
	}
	if !kinds["worker-0"] || !kinds["worker-1"] {
		t.Fatalf("grants to %v, want to both writers and readers", kinds)
	}
}

// A reader rests after each release as long as it thinks, so that readers
// who think for long leave the key free at times, and a writer making one
// attempt at a time gets it between them.
func TestRun_readersRestAsLongAsTheyThink(t *testing.T) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	const think = 60 * time.Millisecond
	base := Config{
		Nodes: nodes.URLs(), Key: "rw", TTL: 500 * time.Millisecond, DisableQuarantine: true,
		ThinkMin: think, ThinkMax: think, RetryMax: 2 * time.Millisecond,
	}
	writer, reader1, reader2 := base, base, base
	writer.Name, writer.ThinkMin, writer.ThinkMax = "worker-0", 2*time.Millisecond, 5*time.Millisecond
	reader1.Name, reader1.Shared = "worker-1", true
	reader2.Name, reader2.Shared = "worker-2", true
	events := runWorkers(t, time.Second, writer, reader1, reader2)
	released := map[string]int64{}
	writes := 0
	for _, ev := range events {
		switch {
		case ev.Op == history.OpRelease && ev.Type == history.Invoke:
			released[ev.Process] = ev.Time
		case ev.Op == history.OpAcquire && ev.Type == history.Invoke && released[ev.Process] != 0 && ev.Process != "worker-0":
			if rest := time.Duration(ev.Time - released[ev.Process]); rest < think {
				t.Fatalf("%s tried again %v after its release, want %v or more", ev.Process, rest, think)
			}
		case ev.Process == history.ProcRegister && ev.Op == history.OpWrite && ev.Type == history.OK:
			writes++
		}
	}
	if len(released) < 3 || writes == 0 {
		t.Fatalf("releases by %v, %d writes; want releases by all three and writes by the writer", released, writes)
	}
}

// A reader that holds to the end of its validity (HoldMargin) rests after
// each release as long as it held, so that readers who take the key again
// at once do not keep it from the writers for good.
func TestRun_readersHoldingToTheEndRestAsLongAsTheyHeld(t *testing.T) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	base := Config{
		Nodes: nodes.URLs(), Key: "rw", TTL: 300 * time.Millisecond, DisableQuarantine: true,
		ThinkMin: time.Millisecond, ThinkMax: 2 * time.Millisecond, RetryMax: 2 * time.Millisecond,
		HoldMargin: 50 * time.Millisecond,
	}
	writer, reader1, reader2 := base, base, base
	writer.Name = "worker-0"
	reader1.Name, reader1.Shared = "worker-1", true
	reader2.Name, reader2.Shared = "worker-2", true
	events := runWorkers(t, 1500*time.Millisecond, writer, reader1, reader2)
	released, writes := checkReadersRestAsLongAsTheyHeld(t, events)
	if len(released) < 3 || writes == 0 {
		t.Fatalf("releases by %v, %d writes; want releases by all three and writes by the writer", released, writes)
	}
}

// checkReadersRestAsLongAsTheyHeld fails t when a reader (any worker but
// worker-0) tried again sooner after a release than it had held; it
// returns the last release of each worker and the register's writes.
func checkReadersRestAsLongAsTheyHeld(t *testing.T, events []history.Event) (released map[string]int64, writes int) {
	t.Helper()
	granted := map[string]int64{}
	released = map[string]int64{}
	for _, ev := range events {
		switch {
		case ev.Op == history.OpAcquire && ev.Type == history.OK:
			granted[ev.Process] = ev.Time
		case ev.Op == history.OpRelease && ev.Type == history.Invoke:
			released[ev.Process] = ev.Time
		case ev.Op == history.OpAcquire && ev.Type == history.Invoke && released[ev.Process] != 0 && ev.Process != "worker-0":
			held := time.Duration(released[ev.Process] - granted[ev.Process])
			if rest := time.Duration(ev.Time - released[ev.Process]); rest < held {
				t.Fatalf("%s held %v and tried again %v after its release, want %v or more", ev.Process, held, rest, held)
			}
		case ev.Process == history.ProcRegister && ev.Op == history.OpWrite && ev.Type == history.OK:
			writes++
		}
	}
	return released, writes
}

// A worker with Names takes the locks of all of them together, records
// each lock of the set on its grant and release, and updates the register
// of each.
func TestRun_workersTakeSetsOfNames(t *testing.T) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	base := Config{
		Nodes: nodes.URLs(), Key: "unused", TTL: 500 * time.Millisecond, DisableQuarantine: true,
		ThinkMin: 2 * time.Millisecond, ThinkMax: 5 * time.Millisecond, RetryMax: 2 * time.Millisecond,
	}
	ab, cb := base, base
	ab.Name, ab.Names = "worker-0", []string{"b", "a"}
	cb.Name, cb.Names, cb.Wait = "worker-1", []string{"c", "b"}, true
	events := runWorkers(t, 500*time.Millisecond, ab, cb)
	r := check.Check(events, 0, check.Bound{})
	if r.Total(check.Kinds) != 0 || r.Writes == 0 {
		t.Fatalf("violations %v, %d writes; want none, some", r.Counts, r.Writes)
	}
	held := map[string]bool{}
	for _, g := range check.Grants(history.Ops(events)) {
		held[g.Worker+":"+g.Key] = g.Released != 0
	}
	written := map[string]bool{}
	for _, ev := range events {
		if ev.Process == history.ProcRegister && ev.Op == history.OpWrite {
			written[ev.Worker+":"+ev.Key] = true
		}
	}
	want := map[string]bool{"worker-0:a": true, "worker-0:b": true, "worker-1:b": true, "worker-1:c": true}
	if !maps.Equal(held, want) || !maps.Equal(written, want) {
		t.Fatalf("held and released %v, wrote %v; want %v", held, written, want)
	}
}

// A worker with Pick takes that many of its Names together, picked afresh
// for each acquisition, and records the names it asked for.
func TestRun_workerPicksNamesAtRandom(t *testing.T) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	cfg := Config{
		Name: "worker-0", Nodes: nodes.URLs(), Key: "unused", Names: []string{"a", "b", "c", "d", "e"}, Pick: 2,
		TTL: 500 * time.Millisecond, DisableQuarantine: true, Wait: true,
		ThinkMin: time.Millisecond, ThinkMax: 2 * time.Millisecond, RetryMax: 2 * time.Millisecond,
	}
	events := runWorkers(t, 500*time.Millisecond, cfg)
	if r := check.Check(events, 0, check.Bound{}); r.Total(check.Kinds) != 0 || r.Grants == 0 {
		t.Fatalf("violations %v, %d grants; want none, some", r.Counts, r.Grants)
	}
	sets := map[string]bool{}
	for _, ev := range events {
		if ev.Op != history.OpAcquire || ev.Type != history.Invoke {
			continue
		}
		if len(ev.Names) != 2 || ev.Names[0] == ev.Names[1] || !strings.Contains("abcde", ev.Names[0]) || !strings.Contains("abcde", ev.Names[1]) {
			t.Fatalf("acquisition of %v, want two of a to e", ev.Names)
		}
		sets[strings.Join(ev.Names, "")] = true
	}
	if len(sets) < 3 {
		t.Fatalf("sets taken %v, want names picked afresh", sets)
	}
}

// A worker with SharedGoroutines has readers and writers of one name in
// its one client: the last goroutines read, the others write.
func TestRun_readerAndWriterGoroutinesShareAClient(t *testing.T) {
	nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	cfg := Config{
		Name: "worker-0", Nodes: nodes.URLs(), Key: "rw", TTL: 500 * time.Millisecond, DisableQuarantine: true,
		Goroutines: 3, SharedGoroutines: 2,
		ThinkMin: time.Millisecond, ThinkMax: 2 * time.Millisecond, RetryMax: 2 * time.Millisecond,
	}
	events := runWorkers(t, 500*time.Millisecond, cfg)
	if r := check.Check(events, 0, check.Bound{}); r.Total(check.Kinds) != 0 || r.Writes == 0 {
		t.Fatalf("violations %v, %d writes; want none, some", r.Counts, r.Writes)
	}
	kinds := map[string]bool{}
	for _, g := range check.Grants(history.Ops(events)) {
		if g.Shared == (g.Worker == "worker-0.0") {
			t.Fatalf("grant %+v: want worker-0.0 alone, and worker-0.1 and worker-0.2 shared", g)
		}
		kinds[g.Worker] = true
	}
	for _, ev := range events {
		if ev.Process == history.ProcRegister && ev.Op == history.OpWrite && ev.Worker != "worker-0.0" {
			t.Fatalf("%s wrote: want writes from the writer only", ev.Worker)
		}
	}
	if len(kinds) != 3 {
		t.Fatalf("grants to %v, want to the writer and both readers", kinds)
	}
}

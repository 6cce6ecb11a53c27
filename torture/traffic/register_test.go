package traffic

import (
	"errors"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/torture/history"
)

func startRegister(t *testing.T, mode Mode) (*Register, *registerClient, *history.Recorder) {
	t.Helper()
	rec := history.NewRecorder(nil)
	r, err := StartRegister(mode, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r, newRegisterClient(r.URL()), rec
}

// TestRegister_unfencedAcceptsStaleWrites checks that an unfenced register
// accepts a write based on a version overwritten since, and records it.
func TestRegister_unfencedAcceptsStaleWrites(t *testing.T) {
	r, c, rec := startRegister(t, Unfenced)
	ctx := t.Context()
	a, err := c.read(ctx, "worker-0", "", 5)
	if err != nil || a.Value != 0 || a.Version != 0 {
		t.Fatalf("read = %+v, %v", a, err)
	}
	if _, err := c.write(ctx, "worker-1", "", 6, 1, 0); err != nil {
		t.Fatal(err)
	}
	// worker-0 writes late from the old read: accepted, losing worker-1's
	// update, which is what the unfenced register is for.
	v, err := c.write(ctx, "worker-0", "", 5, 1, a.Version)
	if err != nil || v != 2 {
		t.Fatalf("stale write = version %d, %v; want 2, nil", v, err)
	}
	if value, version := r.Value(""); value != 1 || version != 2 {
		t.Fatalf("Value() = %d, %d; want 1, 2", value, version)
	}
	if writes := registerWrites(rec); len(writes) != 2 || writes[1].Worker != "worker-0" || writes[1].BasedOn != 0 ||
		writes[1].Version != 2 || writes[1].Type != history.OK {
		t.Fatalf("recorded writes = %+v", writes)
	}
}

// registerWrites returns the writes the register recorded in rec.
func registerWrites(rec *history.Recorder) []history.Event {
	var writes []history.Event
	for _, ev := range rec.Events() {
		if ev.Process == history.ProcRegister && ev.Op == history.OpWrite {
			writes = append(writes, ev)
		}
	}
	return writes
}

func TestRegister_fencedRefusesOlderTokensOnReadsAndWrites(t *testing.T) {
	_, c, rec := startRegister(t, Fenced)
	ctx := t.Context()
	if _, err := c.read(ctx, "worker-0", "", 5); err != nil {
		t.Fatal(err)
	}
	// A newer holder reads: token 6 is now the highest seen.
	if _, err := c.read(ctx, "worker-1", "", 6); err != nil {
		t.Fatal(err)
	}
	// The older holder's write is refused although nothing was written
	// since its read: its read-modify-write would lose worker-1's update.
	if _, err := c.write(ctx, "worker-0", "", 5, 1, 0); !errors.Is(err, ErrStale) {
		t.Fatalf("write with token 5 after a read with 6: err = %v, want ErrStale", err)
	}
	if _, err := c.read(ctx, "worker-0", "", 5); !errors.Is(err, ErrStale) {
		t.Fatalf("read with token 5 after 6: err = %v, want ErrStale", err)
	}
	if _, err := c.write(ctx, "worker-1", "", 6, 1, 0); err != nil {
		t.Fatal(err)
	}
	// One write per token.
	if _, err := c.write(ctx, "worker-1", "", 6, 2, 1); !errors.Is(err, ErrStale) {
		t.Fatalf("second write with token 6: err = %v, want ErrStale", err)
	}
	if _, err := c.write(ctx, "worker-2", "", 7, 2, 1); err != nil {
		t.Fatal(err)
	}
	var refused int
	for _, ev := range rec.Events() {
		if ev.Type == history.Fail {
			refused++
		}
	}
	if refused != 3 {
		t.Fatalf("recorded %d refusals, want 3", refused)
	}
}

func TestRegister_onReadRunsBeforeTheAnswer(t *testing.T) {
	r, c, _ := startRegister(t, Unfenced)
	var got []string
	r.OnRead(func(worker string) {
		got = append(got, worker)
		r.OnRead(nil) // once
	})
	if _, err := c.read(t.Context(), "worker-3", "", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.read(t.Context(), "worker-2", "", 0); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "worker-3" {
		t.Fatalf("OnRead saw %v, want [worker-3]", got)
	}
}

func TestRegister_writeFencedChecksOnlyWrites(t *testing.T) {
	_, c, _ := startRegister(t, WriteFenced)
	ctx := t.Context()
	// Two overlapping holders read the same value...
	if _, err := c.read(ctx, "worker-1", "", 6); err != nil {
		t.Fatal(err)
	}
	if _, err := c.read(ctx, "worker-0", "", 5); err != nil {
		t.Fatalf("read with an older token: %v, want it served", err)
	}
	// ...the older writes first and is accepted, the newer overwrites it.
	if _, err := c.write(ctx, "worker-0", "", 5, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.write(ctx, "worker-1", "", 6, 1, 0); err != nil {
		t.Fatal(err)
	}
	// A late write with an older token is refused.
	if _, err := c.write(ctx, "worker-2", "", 4, 2, 0); !errors.Is(err, ErrStale) {
		t.Fatalf("write with token 4 after 6: err = %v, want ErrStale", err)
	}
}

// Each permit of a semaphore guards a register of its own, with its own
// versions and fencing tokens.
func TestRegister_namedRegistersAreApart(t *testing.T) {
	r, c, rec := startRegister(t, Fenced)
	ctx := t.Context()
	if _, err := c.write(ctx, "worker-0", "sem:permit:1", 9, 1, 0); err != nil {
		t.Fatal(err)
	}
	// A lower token on another register is no older than anything it saw.
	if v, err := c.write(ctx, "worker-1", "sem:permit:2", 3, 1, 0); err != nil || v != 1 {
		t.Fatalf("write to sem:permit:2 with token 3 = version %d, %v; want 1, nil", v, err)
	}
	if _, err := c.write(ctx, "worker-1", "sem:permit:1", 3, 2, 1); !errors.Is(err, ErrStale) {
		t.Fatalf("write to sem:permit:1 with token 3 after 9: err = %v, want ErrStale", err)
	}
	if value, version := r.Value("sem:permit:1"); value != 1 || version != 1 {
		t.Fatalf("Value(sem:permit:1) = %d, %d; want 1, 1", value, version)
	}
	if value, version := r.Value(""); value != 0 || version != 0 {
		t.Fatalf("Value(\"\") = %d, %d; want 0, 0", value, version)
	}
	var keys []string
	for _, ev := range rec.Events() {
		keys = append(keys, ev.Key)
	}
	if strings.Join(keys, ",") != "sem:permit:1,sem:permit:2,sem:permit:1" {
		t.Fatalf("recorded registers %v", keys)
	}
}

// Readers of a read-write lock do not exclude each other: a fenced
// register serves a reader's read whatever readers' tokens it saw, and
// refuses it only below the last token written; a writer older than a
// reader that read is refused.
func TestRegister_fencedServesReadersTogether(t *testing.T) {
	_, c, rec := startRegister(t, Fenced)
	ctx := t.Context()
	for _, fence := range []uint64{7, 6, 5} {
		if _, err := c.readShared(ctx, "worker-1", "", fence); err != nil {
			t.Fatalf("reader's read with token %d after 7: %v, want it served", fence, err)
		}
	}
	// A writer's read or write with a token below a reader's is refused.
	if _, err := c.read(ctx, "worker-0", "", 6); !errors.Is(err, ErrStale) {
		t.Fatalf("writer's read with token 6 after a reader's 7: err = %v, want ErrStale", err)
	}
	if _, err := c.write(ctx, "worker-0", "", 6, 1, 0); !errors.Is(err, ErrStale) {
		t.Fatalf("writer's write with token 6 after a reader's 7: err = %v, want ErrStale", err)
	}
	if _, err := c.write(ctx, "worker-2", "", 8, 1, 0); err != nil {
		t.Fatal(err)
	}
	// A reader older than the last write is refused; a newer one is not.
	if _, err := c.readShared(ctx, "worker-1", "", 7); !errors.Is(err, ErrStale) {
		t.Fatalf("reader's read with token 7 after a write with 8: err = %v, want ErrStale", err)
	}
	if r, err := c.readShared(ctx, "worker-3", "", 8); err != nil || r.Value != 1 {
		t.Fatalf("reader's read with token 8 = %+v, %v; want value 1", r, err)
	}
	shared := 0
	for _, ev := range rec.Events() {
		if ev.Shared {
			shared++
		}
	}
	if shared != 5 {
		t.Fatalf("%d register events of readers, want 5", shared)
	}
}

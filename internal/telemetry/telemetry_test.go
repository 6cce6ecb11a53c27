package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// records is a slog.Handler that keeps the records' levels and messages.
type records struct {
	mu   sync.Mutex
	list []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec.Level.String()+" "+rec.Message)
	return nil
}

func (r *records) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.list
	r.list = nil
	return got
}

func TestTelemetry_nilWithoutLoggerOrProviders(t *testing.T) {
	if New(Config{Nodes: []string{"a"}}) != nil {
		t.Error("telemetry without logger or providers")
	}
}

// A node's health is logged on its transitions only, with hysteresis both
// ways; answers that say nothing of the node change nothing.
func TestLog_nodeHealthTransitions(t *testing.T) {
	rec := &records{}
	tel := New(Config{Logger: slog.New(rec), Nodes: []string{"a"}})
	ctx := context.Background()
	feed := func(op Op, outcomes ...Outcome) []string {
		for _, o := range outcomes {
			a := Answer{Node: "a", Outcome: o, Latency: time.Millisecond}
			if o == Timeout || o == Error {
				a.Err = errors.New("down")
			}
			tel.Node(ctx, 0, op, a)
		}
		return rec.take()
	}
	steps := []struct {
		op       Op
		outcomes []Outcome
		want     []string
	}{
		{OpAcquire, []Outcome{Timeout, Error, NoAnswer, OK}, nil}, // an answer resets the count
		{OpRelease, []Outcome{Timeout, Error}, nil},
		{OpExtend, []Outcome{Timeout}, []string{"WARN redlock: node failing"}},
		{OpAcquire, []Outcome{Error, Timeout, Error, Error, NoAnswer, Error}, nil},
		{OpAcquire, []Outcome{OK, Held, Error, OK, OK}, nil},
		{OpAcquire, []Outcome{Recovering}, []string{"INFO redlock: node answering again"}},
		{OpAcquire, []Outcome{Recovering}, []string{"INFO redlock: node recovering from a restart, not voting"}},
		{OpAcquire, []Outcome{Recovering, Recovering}, nil},
		{OpRelease, []Outcome{OK, Held}, nil}, // only an acquisition says it votes
		{OpAcquire, []Outcome{Held}, []string{"INFO redlock: node voting again after its restart quarantine"}},
		{OpAcquire, []Outcome{OK, Held}, nil},
	}
	for i, s := range steps {
		if got := feed(s.op, s.outcomes...); !slices.Equal(got, s.want) {
			t.Errorf("step %d %v: records %q, want %q", i, s.outcomes, got, s.want)
		}
	}
	// A cancelled caller says nothing of the node.
	for range 2 * failingAfter {
		tel.Node(ctx, 0, OpAcquire, Answer{Node: "a", Outcome: Error, Err: context.Canceled})
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("cancelled requests logged %q", got)
	}
}

// The limiter lets one record through per interval, and tells the next one
// how many it left out.
func TestLog_limiter(t *testing.T) {
	var l limiter
	if ok, skipped := l.allow(); !ok || skipped != 0 {
		t.Fatalf("first record: %v, %d", ok, skipped)
	}
	for range 3 {
		if ok, _ := l.allow(); ok {
			t.Fatal("a second record within the interval")
		}
	}
	l.next = time.Now().Add(-time.Millisecond) // the interval passed
	if ok, skipped := l.allow(); !ok || skipped != 3 {
		t.Fatalf("record after the interval: %v, %d left out", ok, skipped)
	}
}

// Durations are histograms in seconds with the lock-latency buckets, and
// counts have curly-brace units.
func TestMetric_instrumentsAndUnits(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel := New(Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), Nodes: []string{"a"},
		NodeTimeout: func() time.Duration { return 120 * time.Millisecond }})
	ctx := context.Background()
	tel.Node(ctx, 0, OpAcquire, Answer{Node: "a", Outcome: OK, Latency: 300 * time.Microsecond})
	tel.Node(ctx, 0, OpAcquire, Answer{Node: "a", Outcome: Timeout, Latency: 50 * time.Millisecond})
	tel.LockGranted(ctx)
	tel.LockEnded("k", 2*time.Second, EndLost, RenewalFailed, errors.New("lost"))
	tel.LockEnded("k", time.Second, EndExpired, 0, errors.New("expired"))
	_, call := tel.StartAcquire(ctx, "k", time.Second, false)
	call.EndAcquire(Conflict, 0, nil, errors.New("held"))

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	units := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			units[m.Name] = m.Unit
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				wantBuckets(t, m.Name, h)
			}
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && (len(g.DataPoints) != 1 || g.DataPoints[0].Value != 0.12) {
				t.Errorf("%s: %v, want one point of 0.12", m.Name, g.DataPoints)
			}
		}
	}
	want := map[string]string{
		"redlock.node.requests": "{request}", "redlock.node.request.duration": "s",
		"redlock.locks.held": "{lock}", "redlock.locks.lost": "{lock}", "redlock.locks.expired": "{lock}", "redlock.lock.hold.duration": "s",
		"redlock.acquisitions": "{acquisition}", "redlock.acquire.duration": "s", "redlock.node.timeout": "s",
	}
	for name, unit := range want {
		if units[name] != unit {
			t.Errorf("%s: unit %q, want %q", name, units[name], unit)
		}
	}

	// Closed, the client's timeout is no longer reported.
	tel.Close()
	rm = metricdata.ResourceMetrics{}
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && len(g.DataPoints) > 0 {
				t.Errorf("%s after Close: %v", m.Name, g.DataPoints)
			}
		}
	}
}

// wantBuckets checks that a histogram has the buckets meant for it, and
// that the node latency histogram left the timeout out.
func wantBuckets(t *testing.T, name string, h metricdata.Histogram[float64]) {
	t.Helper()
	buckets := latencyBuckets
	if name == "redlock.lock.hold.duration" {
		buckets = holdBuckets
	}
	for _, dp := range h.DataPoints {
		if !slices.Equal(dp.Bounds, buckets) {
			t.Errorf("%s: bounds %v", name, dp.Bounds)
		}
		if name == "redlock.node.request.duration" && dp.Count != 1 {
			t.Errorf("%s: %d values, want the served request's only", name, dp.Count)
		}
	}
}

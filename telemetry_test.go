package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// observed is a client's telemetry under test: its metrics through a
// manual reader, its spans through a recorder, its log records captured.
type observed struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tracer *sdktrace.TracerProvider
	logs   *capturedLogs
}

// observe returns options (fast ones) that send a client's telemetry to a
// new observed.
func observe(t testing.TB) (*observed, *redlock.Options) {
	o := &observed{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), logs: &capturedLogs{}}
	o.tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))
	opts := fast()
	opts.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))
	opts.TracerProvider = o.tracer
	opts.Logger = slog.New(o.logs)
	return o, opts
}

// attrs is a set of attributes a data point must have, among others.
type attrs map[string]string

func (want attrs) match(set attribute.Set) bool {
	for k, v := range want {
		if got, ok := set.Value(attribute.Key(k)); !ok || got.String() != v {
			return false
		}
	}
	return true
}

// metric returns the metric named name, failing the test if it was never
// recorded.
func (o *observed) metric(t testing.TB, name string) metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/redlock-go/redlock" {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Metrics{}
}

// recorded reports whether the metric named name has any data point.
func (o *observed) recorded(t testing.TB, name string) bool {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return true
			}
		}
	}
	return false
}

// sum adds up the data points of the counter or up-down counter name that
// have want's attributes.
func (o *observed) sum(t testing.TB, name string, want attrs) int64 {
	t.Helper()
	data, ok := o.metric(t, name).Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is not an int64 sum", name)
	}
	var n int64
	for _, dp := range data.DataPoints {
		if want.match(dp.Attributes) {
			n += dp.Value
		}
	}
	return n
}

// count returns how many values the histogram name recorded with want's
// attributes.
func (o *observed) count(t testing.TB, name string, want attrs) uint64 {
	t.Helper()
	data, ok := o.metric(t, name).Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is not a float64 histogram", name)
	}
	var n uint64
	for _, dp := range data.DataPoints {
		if want.match(dp.Attributes) {
			n += dp.Count
		}
	}
	return n
}

// eventually polls cond until it holds, failing the test after a while.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// capturedLogs is a slog.Handler that keeps every record.
type capturedLogs struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *capturedLogs) Enabled(context.Context, slog.Level) bool { return true }
func (h *capturedLogs) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *capturedLogs) WithGroup(string) slog.Handler            { return h }

func (h *capturedLogs) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// count counts the records at level whose message starts with msg and
// that have want's attributes.
func (h *capturedLogs) count(level slog.Level, msg string, want attrs) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level != level || !strings.HasPrefix(r.Message, msg) {
			continue
		}
		found := 0
		r.Attrs(func(a slog.Attr) bool {
			if v, ok := want[a.Key]; ok && a.Value.String() == v {
				found++
			}
			return true
		})
		if found == len(want) {
			n++
		}
	}
	return n
}

// attr returns the attribute key of the first record at level whose
// message starts with msg, "" when there is none.
func (h *capturedLogs) attr(level slog.Level, msg, key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Level != level || !strings.HasPrefix(r.Message, msg) {
			continue
		}
		v := ""
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				v = a.Value.String()
			}
			return true
		})
		return v
	}
	return ""
}

// dump logs every record, for a failing test.
func (h *capturedLogs) dump(t testing.TB) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		var b strings.Builder
		r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
		t.Logf("%s %s%s", r.Level, r.Message, b.String())
	}
}

func TestTelemetry_offWithoutLoggerOrProviders(t *testing.T) {
	conns := goredisConns(t, []string{"127.0.0.1:1"})
	c, err := redlock.New(conns, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.HasTelemetry() {
		t.Error("a client without logger or providers has telemetry")
	}
	c2, err := redlock.New(goredisConns(t, []string{"127.0.0.1:1"}), &redlock.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if !c2.HasTelemetry() {
		t.Error("a client with a logger has no telemetry")
	}
}

// An acquire, extend and release cycle records each call's outcome, the
// wait and hold times, and every node's requests, and no metric carries the
// lock's key.
func TestMetric_acquireExtendReleaseCycle(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)

	lock, err := c.Acquire(bg, "cycle")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Extend(bg, 0); err != nil {
		t.Fatal(err)
	}
	if n := o.sum(t, "redlock.locks.held", nil); n != 1 {
		t.Errorf("locks held while held: %d", n)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}

	acquired := attrs{"redlock.call": "acquire", "redlock.outcome": "acquired"}
	for _, c := range []struct {
		name string
		want attrs
	}{
		{"redlock.acquisitions", acquired},
		{"redlock.extensions", attrs{"redlock.call": "extend", "redlock.outcome": "extended"}},
		{"redlock.releases", attrs{"redlock.call": "release", "redlock.outcome": "released"}},
	} {
		if n := o.sum(t, c.name, c.want); n != 1 {
			t.Errorf("%s %v: %d, want 1", c.name, c.want, n)
		}
	}
	if n := o.count(t, "redlock.acquire.duration", acquired); n != 1 {
		t.Errorf("acquire durations: %d", n)
	}
	if n := o.count(t, "redlock.lock.hold.duration", attrs{"redlock.outcome": "released"}); n != 1 {
		t.Errorf("hold durations: %d", n)
	}
	if n := o.sum(t, "redlock.locks.held", nil); n != 0 {
		t.Errorf("locks held after the release: %d", n)
	}
	wantNodeRequests(t, o, c.Nodes())
	wantNoKeyAttribute(t, o)
}

// wantNodeRequests checks that each of nodes was sent the acquisition, the
// extension and the release, and granted a quorum of them.
func wantNodeRequests(t *testing.T, o *observed, nodes []string) {
	t.Helper()
	for _, op := range []string{"acquire", "extend", "release"} {
		var all, ok int64
		for _, node := range nodes {
			n := o.sum(t, "redlock.node.requests", attrs{"redlock.node": node, "redlock.op": op})
			if n != 1 {
				t.Errorf("%s requests to %s: %d, want 1", op, node, n)
			}
			all += n
			ok += o.sum(t, "redlock.node.requests", attrs{"redlock.node": node, "redlock.op": op, "redlock.outcome": "ok"})
		}
		if ok < 2 {
			t.Errorf("%s: %d of %d nodes ok", op, ok, all)
		}
		if n := o.count(t, "redlock.node.request.duration", attrs{"redlock.op": op}); n < 2 || n > 3 {
			t.Errorf("%s latencies: %d, want one per node that answered", op, n)
		}
	}
}

// wantNoKeyAttribute checks that no data point of any metric carries a
// lock key, whose values are unbounded.
func wantNoKeyAttribute(t *testing.T, o *observed) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	check := func(name string, set attribute.Set) {
		if _, ok := set.Value("redlock.key"); ok {
			t.Errorf("%s has the key as an attribute", name)
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					check(m.Name, dp.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					check(m.Name, dp.Attributes)
				}
			}
		}
	}
}

// A lock held by another client is recorded as a conflict, for TryAcquire
// and for an Acquire that gave up, with the nodes' "held" answers.
func TestMetric_conflict(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	lock, err := holder.Acquire(bg, "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)

	if _, err := c.TryAcquire(bg, "busy"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire of a held lock: %v", err)
	}
	twice := redlock.WithRetry(redlock.LimitAttempts(redlock.Jittered(10*time.Millisecond, 20*time.Millisecond), 2))
	if _, err := c.Acquire(bg, "busy", twice); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("Acquire of a held lock: %v", err)
	}
	for _, call := range []string{"try_acquire", "acquire"} {
		want := attrs{"redlock.call": call, "redlock.outcome": "conflict"}
		if n := o.sum(t, "redlock.acquisitions", want); n != 1 {
			t.Errorf("%v: %d acquisitions, want 1", want, n)
		}
		if n := o.count(t, "redlock.acquire.duration", want); n != 1 {
			t.Errorf("%v: %d durations, want 1", want, n)
		}
	}
	if n := o.sum(t, "redlock.node.requests", attrs{"redlock.op": "acquire", "redlock.outcome": "held"}); n < 4 {
		t.Errorf("%d held answers to acquisitions, want a quorum's for each of two calls at least", n)
	}
	if n := o.sum(t, "redlock.acquisitions", attrs{"redlock.outcome": "acquired"}); n != 0 {
		t.Errorf("%d acquired", n)
	}
}

// cycle takes and releases a fresh lock, failing the test if it cannot.
func cycle(t *testing.T, c *redlock.Client, key string) {
	t.Helper()
	lock, err := c.TryAcquire(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
}

// A node that is down shows error outcomes, and logs one "failing" record
// however many requests fail; restarted, it logs one "answering again",
// then one "recovering" for its restart quarantine.
func TestLog_nodeDownThenBack(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	down := cluster.Node(2)
	node := c.Nodes()[2]
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	i := 0
	eventually(t, "the down node is reported failing", func() bool {
		i++
		cycle(t, c, "down-"+strconv.Itoa(i))
		return o.logs.count(slog.LevelWarn, "redlock: node failing", attrs{"node": node}) > 0
	})
	for range 20 {
		i++
		cycle(t, c, "down-"+strconv.Itoa(i))
	}
	if n := o.sum(t, "redlock.node.requests", attrs{"redlock.node": node, "redlock.outcome": "error"}); n < 3 {
		t.Errorf("%d error outcomes of the down node", n)
	}
	if n := o.sum(t, "redlock.node.requests", attrs{"redlock.node": c.Nodes()[0], "redlock.outcome": "error"}); n != 0 {
		t.Errorf("%d error outcomes of a node that is up", n)
	}

	if err := down.Start(bg); err != nil {
		t.Fatal(err)
	}
	loadScripts(t, cluster)
	eventually(t, "the restarted node is reported answering and recovering", func() bool {
		i++
		cycle(t, c, "back-"+strconv.Itoa(i))
		return o.logs.count(slog.LevelInfo, "redlock: node recovering", attrs{"node": node}) > 0
	})
	for range 20 {
		i++
		cycle(t, c, "back-"+strconv.Itoa(i))
	}
	for _, r := range []struct {
		level slog.Level
		msg   string
	}{
		{slog.LevelWarn, "redlock: node failing"},
		{slog.LevelInfo, "redlock: node answering again"},
		{slog.LevelInfo, "redlock: node recovering"},
	} {
		if n := o.logs.count(r.level, r.msg, attrs{"node": node}); n != 1 {
			t.Errorf("%d %q records, want 1", n, r.msg)
			o.logs.dump(t)
		}
	}
	if n := o.logs.count(slog.LevelWarn, "redlock: node failing", nil); n != 1 {
		t.Errorf("%d failing records in all, want 1", n)
	}
}

// A node that stops answering (paused) while the others decide every call
// is reported failing, and its requests count as timeouts, once they end:
// each call returned without it (no_answer). Before, such a node showed
// nowhere, neither in the log nor as a timeout, for as long as it was
// paused.
func TestLog_silentMinorityNodeIsReported(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	silent := cluster.Node(2)
	node := c.Nodes()[2]
	if err := silent.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Resume() })
	i := 0
	eventually(t, "the paused node is reported failing", func() bool {
		i++
		cycle(t, c, "silent-"+strconv.Itoa(i))
		return o.logs.count(slog.LevelWarn, "redlock: node failing", attrs{"node": node}) > 0
	})
	if n := o.sum(t, "redlock.node.requests", attrs{"redlock.node": node, "redlock.outcome": "timeout"}); n < 3 {
		t.Errorf("%d timeout outcomes of the paused node, want at least 3", n)
	}
	if n := o.logs.count(slog.LevelWarn, "redlock: node failing", nil); n != 1 {
		t.Errorf("%d failing records in all, want 1: the paused node's", n)
		o.logs.dump(t)
	}
}

// A renewed lock whose key vanishes from the nodes is lost at its next
// renewal: counted as taken over, logged once, and its hold time ends.
func TestTelemetry_lostLockCountedAndLoggedOnce(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	lock, err := c.Acquire(bg, "vanishing", redlock.WithAutoRenew())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "DEL", "vanishing"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-lock.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was never declared lost")
	}
	if !errors.Is(lock.Err(), redlock.ErrLockLost) {
		t.Fatalf("lock ended with %v", lock.Err())
	}
	lock.Release(bg) // after the loss: no second end
	if n := o.sum(t, "redlock.locks.lost", attrs{"redlock.reason": "taken_over"}); n != 1 {
		t.Errorf("%d locks lost as taken over, want 1", n)
	}
	if n := o.sum(t, "redlock.extensions", attrs{"redlock.call": "renew", "redlock.outcome": "lost"}); n != 1 {
		t.Errorf("%d renewals that lost the lock, want 1", n)
	}
	if n := o.count(t, "redlock.lock.hold.duration", nil); n != 1 {
		t.Errorf("%d hold times, want 1", n)
	}
	if n := o.count(t, "redlock.lock.hold.duration", attrs{"redlock.outcome": "lost"}); n != 1 {
		t.Errorf("%d hold times ended by a loss, want 1", n)
	}
	if n := o.sum(t, "redlock.locks.held", nil); n != 0 {
		t.Errorf("locks held: %d", n)
	}
	if n := o.logs.count(slog.LevelWarn, "redlock: lock lost", attrs{"key": "vanishing", "reason": "taken_over"}); n != 1 {
		t.Errorf("%d lock-lost records, want 1", n)
		o.logs.dump(t)
	}
}

// A renewed lock whose renewals fail because a majority of nodes stopped
// answering is lost at its deadline as renewal_failed, not taken_over,
// though its error carries the answers to the last failed renewal: the
// nodes that did not answer took nothing.
func TestTelemetry_renewalsToSilentNodesAreNotATakeOver(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	lock, err := c.Acquire(bg, "silenced", redlock.WithTTL(time.Second), redlock.WithAutoRenew())
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-lock.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was never declared lost")
	}
	if !errors.Is(lock.Err(), redlock.ErrLockLost) {
		t.Fatalf("lock ended with %v", lock.Err())
	}
	if n := o.logs.count(slog.LevelWarn, "redlock: lock lost", attrs{"key": "silenced", "reason": "renewal_failed"}); n != 1 {
		t.Errorf("%d lock-lost records with reason renewal_failed, want 1", n)
		o.logs.dump(t)
	}
	if n := o.sum(t, "redlock.locks.lost", attrs{"redlock.reason": "taken_over"}); n != 0 {
		t.Errorf("%d locks lost as taken over, want 0", n)
	}
}

// A lock that nobody extends, watches or releases is reported when its
// deadline comes within the loss margin, without a call asking it: as
// expired, since nobody tried to keep it (the "one runner per period"
// pattern), in its own counter and at Debug, never as a loss.
func TestTelemetry_unwatchedLockExpiresAtItsDeadline(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	if _, err := c.Acquire(bg, "forgotten", redlock.WithTTL(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the forgotten lock is reported expired", func() bool {
		return o.logs.count(slog.LevelDebug, "redlock: lock expired", attrs{"key": "forgotten"}) == 1
	})
	if n := o.sum(t, "redlock.locks.expired", nil); n != 1 {
		t.Errorf("%d locks expired, want 1", n)
	}
	if n := o.count(t, "redlock.lock.hold.duration", attrs{"redlock.outcome": "expired"}); n != 1 {
		t.Errorf("%d hold times ended by expiry, want 1", n)
	}
	if o.recorded(t, "redlock.locks.lost") {
		t.Errorf("an expired lock counted as lost: %d", o.sum(t, "redlock.locks.lost", nil))
	}
	if n := o.logs.count(slog.LevelWarn, "redlock: lock lost", nil); n != 0 {
		t.Errorf("%d lock-lost records for an expired lock", n)
		o.logs.dump(t)
	}
	if n := o.sum(t, "redlock.locks.held", nil); n != 0 {
		t.Errorf("locks held: %d", n)
	}
}

// A lock its holder extended once, then left to reach its deadline, is
// lost, not expired: its holder wanted it and did not keep it.
func TestTelemetry_extendedLockLostAtItsDeadline(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	lock, err := c.Acquire(bg, "abandoned", redlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Extend(bg, 0); err != nil && !errors.Is(err, redlock.ErrNotExtended) {
		t.Fatal(err)
	}
	eventually(t, "the abandoned lock is reported lost", func() bool {
		return o.logs.count(slog.LevelWarn, "redlock: lock lost", attrs{"key": "abandoned", "reason": "deadline_passed"}) == 1
	})
	if n := o.sum(t, "redlock.locks.lost", attrs{"redlock.reason": "deadline_passed"}); n != 1 {
		t.Errorf("%d locks lost at their deadline, want 1", n)
	}
	if o.recorded(t, "redlock.locks.expired") {
		t.Errorf("a lost lock counted as expired: %d", o.sum(t, "redlock.locks.expired", nil))
	}
}

// A release that fewer than a quorum of nodes answered is logged with
// each node's answer, once however many fail in a row.
func TestLog_releaseWithoutQuorum(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	var locks []*redlock.Lock
	for _, key := range []string{"a", "b", "c"} {
		lock, err := c.Acquire(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, lock)
		// Acquire returned at a quorum: node 0's grant lands before the
		// DEL below, which it would otherwise undo.
		waitForKey(t, cluster, key, lock.Token())
	}
	// The first node no longer holds "a": it refuses the release.
	do(t, cluster.Node(0), "DEL", "a")
	for _, n := range cluster.Nodes()[1:] {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for _, lock := range locks {
		if err := lock.Release(bg); !errors.Is(err, redlock.ErrNotReleased) {
			t.Fatalf("release with two nodes of three down: %v", err)
		}
	}
	nodes := o.logs.attr(slog.LevelWarn, "redlock: release did not reach a quorum", "nodes")
	if want := cluster.Addrs()[0] + " not held by this token; "; !strings.HasPrefix(nodes, want) {
		t.Errorf("the failed release's nodes: %q, want it to begin with %q", nodes, want)
	}
	if n := o.sum(t, "redlock.releases", attrs{"redlock.outcome": "not_released"}); n != 3 {
		t.Errorf("%d releases not released, want 3", n)
	}
	if n := o.logs.count(slog.LevelWarn, "redlock: release did not reach a quorum", attrs{"key": "a"}); n != 1 {
		t.Errorf("%d records of the first release, want 1", n)
	}
	if n := o.logs.count(slog.LevelWarn, "redlock: release did not reach a quorum", nil); n != 1 {
		t.Errorf("%d records of failed releases, want 1 (rate-limited)", n)
		o.logs.dump(t)
	}
}

// The gauge redlock.node.timeout reports each client's per-node timeout
// as it stands, one point per client on a shared meter: NodeTimeout,
// raised while a node answers late (here a lone node's timeouts), and
// nothing once the client is closed.
func TestMetric_nodeTimeout(t *testing.T) {
	const nodeTimeout = 50 * time.Millisecond
	o, opts := observe(t)
	opts.NodeTimeout = nodeTimeout
	slowNodes := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	slow := newClient(t, slowNodes, adapters[1], opts)
	fast := newClient(t, redlocktest.Start(t, redlocktest.Options{Nodes: 1}), adapters[1], opts)
	// At rest: a reply of MarkReady that came late on a busy host raised
	// a timeout for a moment.
	eventually(t, "two node timeouts of NodeTimeout", func() bool {
		got := o.gauges(t, "redlock.node.timeout")
		return len(got) == 2 && got[0] == nodeTimeout.Seconds() && got[1] == nodeTimeout.Seconds()
	})
	pauseAll(t, slowNodes)
	if _, err := slow.TryAcquire(bg, "k"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("the node paused: %v", err)
	}
	if got := o.gauges(t, "redlock.node.timeout"); len(got) != 2 || got[0] != nodeTimeout.Seconds() || got[1] <= nodeTimeout.Seconds() {
		t.Errorf("after the slow client's timeout: node timeouts %v, want %vs and one above it", got, nodeTimeout.Seconds())
	}
	resumeAll(t, slowNodes)
	slow.Close()
	if got := o.gauges(t, "redlock.node.timeout"); len(got) != 1 {
		t.Errorf("one client closed: node timeouts %v, want one", got)
	}
	fast.Close()
	if o.recorded(t, "redlock.node.timeout") {
		t.Errorf("redlock.node.timeout reported after Close")
	}
}

// gauges returns the values of the float gauge name, one per client
// (attribute redlock.client), in increasing order.
func (o *observed) gauges(t testing.TB, name string) []float64 {
	t.Helper()
	data, ok := o.metric(t, name).Data.(metricdata.Gauge[float64])
	if !ok {
		t.Fatalf("%s is not a float64 gauge: %v", name, o.metric(t, name).Data)
	}
	var values []float64
	clients := map[string]bool{}
	for _, dp := range data.DataPoints {
		client, _ := dp.Attributes.Value("redlock.client")
		if client.AsString() == "" || clients[client.AsString()] {
			t.Fatalf("%s: a point without a client of its own: %v", name, data.DataPoints)
		}
		clients[client.AsString()] = true
		values = append(values, dp.Value)
	}
	slices.Sort(values)
	return values
}

// A release that carries a waiting goroutine's attempt counts as a
// handoff.
func TestMetric_handoff(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	first, err := c.Acquire(bg, "passed")
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan error, 1)
	go func() {
		// The attempt is offered for the first wait, which the retry
		// delay bounds: long enough for the release to come first.
		lock, err := c.Acquire(bg, "passed", redlock.WithRetry(redlock.Jittered(time.Minute, time.Minute)))
		if err == nil {
			err = lock.Release(bg)
		}
		next <- err
	}()
	eventually(t, "the second goroutine offers its attempt", func() bool { return c.HandoffParked("passed") })
	if err := first.Release(bg); err != nil {
		t.Fatal(err)
	}
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	if n := o.sum(t, "redlock.handoffs", attrs{"redlock.outcome": "acquired"}); n != 1 {
		t.Errorf("%d handoffs that acquired, want 1", n)
	}
	if n := o.sum(t, "redlock.acquisitions", attrs{"redlock.outcome": "acquired"}); n != 2 {
		t.Errorf("%d acquisitions, want 2", n)
	}
}

// Acquire's span is a child of the caller's, with the fencing token, the
// attempt and each node's answer; Release's is one too.
func TestSpan_acquireAndRelease(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	ctx, parent := o.tracer.Tracer("test").Start(bg, "caller")
	lock, err := c.Acquire(ctx, "traced")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	parent.End()

	acquire := endedSpan(t, o, "redlock.acquire")
	if acquire.Parent().SpanID() != parent.SpanContext().SpanID() || acquire.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Error("the acquire span is not a child of the caller's")
	}
	wantSpanAttrs(t, acquire, map[attribute.Key]attribute.Value{
		"redlock.key":      attribute.StringValue("traced"),
		"redlock.call":     attribute.StringValue("acquire"),
		"redlock.fence":    attribute.Int64Value(int64(lock.Fence())),
		"redlock.attempts": attribute.IntValue(1),
		"redlock.outcome":  attribute.StringValue("acquired"),
		"redlock.ttl_ms":   attribute.Int64Value(fast().TTL.Milliseconds()),
	})
	if n := countEvents(acquire, "redlock.node"); n != 3 {
		t.Errorf("%d node events, want 3", n)
	}
	if n := countEvents(acquire, "redlock.attempt"); n != 1 {
		t.Errorf("%d attempt events, want 1", n)
	}
	if acquire.Status().Code == codes.Error {
		t.Errorf("status %v", acquire.Status())
	}
	release := endedSpan(t, o, "redlock.release")
	if release.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Error("the release span is not a child of the caller's")
	}
	wantSpanAttrs(t, release, map[attribute.Key]attribute.Value{"redlock.outcome": attribute.StringValue("released")})
	if n := countEvents(release, "redlock.node"); n != 3 {
		t.Errorf("%d node events on the release, want 3", n)
	}
}

// A failed Acquire's span has an error status, the error, and an event
// per attempt.
func TestSpan_failedAcquire(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	o, opts := observe(t)
	c := newClient(t, cluster, adapters[0], opts)
	lock, err := holder.Acquire(bg, "taken")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	thrice := redlock.WithRetry(redlock.LimitAttempts(redlock.Jittered(10*time.Millisecond, 20*time.Millisecond), 3))
	if _, err := c.Acquire(bg, "taken", thrice); err == nil {
		t.Fatal("acquired a held lock")
	}
	span := endedSpan(t, o, "redlock.acquire")
	if span.Status().Code != codes.Error || span.Status().Description == "" {
		t.Errorf("status %v", span.Status())
	}
	wantSpanAttrs(t, span, map[attribute.Key]attribute.Value{"redlock.outcome": attribute.StringValue("conflict")})
	if n := countEvents(span, "redlock.attempt"); n != 3 {
		t.Errorf("%d attempt events, want one per attempt", n)
	}
	wantSpanAttrs(t, span, map[attribute.Key]attribute.Value{"redlock.attempts": attribute.IntValue(3)})
	if n := countEvents(span, "exception"); n != 1 {
		t.Errorf("%d exception events, want the error", n)
	}
}

// endedSpan returns the one ended span named name.
func endedSpan(t *testing.T, o *observed, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range o.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ended %s spans, want 1", len(found), name)
	}
	return found[0]
}

func wantSpanAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[attribute.Key]attribute.Value) {
	t.Helper()
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		got[kv.Key] = kv.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s %s = %v, want %v", s.Name(), k, got[k].String(), v.String())
		}
	}
}

func countEvents(s sdktrace.ReadOnlySpan, name string) int {
	n := 0
	for _, e := range s.Events() {
		if e.Name == name {
			n++
		}
	}
	return n
}

// The clean-up after a failed attempt is sent only to the nodes that may
// hold something of it: a node that refused it is answered for without a
// request, and is counted as no request in redlock.node.requests, nor
// timed in redlock.node.request.duration. Before, each refusing node
// counted a release "held" at about 0 ms that it never received.
func TestMetric_cleanUpCountsOnlyTheReleasesSent(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	o, opts := observe(t)
	// Long enough for the two running nodes to refuse in time on a loaded
	// machine; the paused one times out.
	opts.TTL, opts.NodeTimeout = 5*time.Second, time.Second
	c := newClient(t, cluster, adapters[0], opts)
	lock, err := holder.Acquire(bg, "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	waitForKey(t, cluster, "busy", lock.Token())
	paused := cluster.Nodes()[2]
	if err := paused.Pause(); err != nil {
		t.Fatal(err)
	}
	defer paused.Resume()
	if _, err := c.TryAcquire(bg, "busy"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire of a held lock: %v", err)
	}
	names := c.Nodes()
	for i, name := range names[:2] {
		if n := o.sum(t, "redlock.node.requests", attrs{"redlock.node": name, "redlock.op": "acquire", "redlock.outcome": "held"}); n != 1 {
			t.Errorf("node %d: %d acquisitions refused, want 1", i, n)
		}
		if n := o.sum(t, "redlock.node.requests", attrs{"redlock.node": name, "redlock.op": "release"}); n != 0 {
			t.Errorf("node %d refused the attempt: %d clean-up releases counted, want none (none is sent)", i, n)
		}
	}
	// The release is sent to the paused node, and may be sent again in
	// the background before this reads the counts.
	if n := o.sum(t, "redlock.node.requests", attrs{"redlock.node": names[2], "redlock.op": "release"}); n < 1 {
		t.Errorf("the paused node: %d clean-up releases counted, want at least 1", n)
	}
	if n := o.count(t, "redlock.node.request.duration", attrs{"redlock.op": "release"}); n != 0 {
		t.Errorf("%d release latencies, want none: no node answered a release", n)
	}
}

package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// The metrics' attribute keys. A lock's key is never one: keys are
// unbounded, and each would make series of its own.
const (
	AttrCall    = attribute.Key("redlock.call")    // the API call (Kind)
	AttrOutcome = attribute.Key("redlock.outcome") // how it ended
	AttrReason  = attribute.Key("redlock.reason")  // why a lock was lost
	AttrNode    = attribute.Key("redlock.node")    // Conn.Name of a node
	AttrOp      = attribute.Key("redlock.op")      // the request sent to a node
	AttrClient  = attribute.Key("redlock.client")  // a Client's random id, for its gauges
)

// Histogram bucket boundaries, in seconds.
var (
	// latencyBuckets suit a node's round trip (a tenth of a millisecond on
	// a host's loopback, milliseconds across a network, the 50 ms default
	// node timeout) and an Acquire's wait (one round trip when the lock is
	// free, seconds to minutes when it waits for a holder).
	latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// holdBuckets suit how long a lock is held: from a millisecond's
	// critical section to a job that renews its lock for an hour.
	holdBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
)

// metrics are the instruments of one client, and the attribute sets of
// their measurements, made once so that a measurement builds none.
type metrics struct {
	acquisitions metric.Int64Counter
	acquireTime  metric.Float64Histogram
	extensions   metric.Int64Counter
	releases     metric.Int64Counter
	handoffs     metric.Int64Counter
	holdTime     metric.Float64Histogram
	lost         metric.Int64Counter
	expired      metric.Int64Counter
	held         metric.Int64UpDownCounter
	nodeRequests metric.Int64Counter
	nodeLatency  metric.Float64Histogram
	// nodeTimeout reports the per-node timeout at each collection, until
	// Close unregisters it; nil without one.
	nodeTimeout metric.Registration

	acquireAttrs [kindCount][acquireResults]measured
	extendAttrs  [kindCount][extendResults]measured
	releaseAttrs [kindCount][releaseResults]measured
	handoffAttrs [2]measured // not acquired, acquired
	holdAttrs    [endCount]measured
	lostAttrs    [reasonCount]measured
	nodeAttrs    [][opCount][outcomeCount]measured // per node
	nodeOpAttrs  [][opCount]measured               // per node
}

// newMetrics creates the instruments on meter, with the gauge of the
// per-node timeout that timeout returns when it is not nil. An instrument
// that cannot be created does nothing, and the error says which.
func newMetrics(meter metric.Meter, nodes []string, client string, timeout func() time.Duration) (*metrics, error) {
	b := builder{meter: meter}
	m := &metrics{
		acquisitions: b.counter("redlock.acquisitions", "{acquisition}",
			"Acquire and TryAcquire calls, by how they ended"),
		acquireTime: b.histogram("redlock.acquire.duration", latencyBuckets,
			"Time from an Acquire or TryAcquire call to its result, by how it ended"),
		extensions: b.counter("redlock.extensions", "{extension}",
			"Extensions (Extend, background renewal, ExtendToken), by how they ended"),
		releases: b.counter("redlock.releases", "{release}",
			"Release and ReleaseToken calls, by how they ended"),
		handoffs: b.counter("redlock.handoffs", "{handoff}",
			"Releases that carried the attempt of a goroutine of the same client waiting in Acquire, by whether it acquired"),
		holdTime: b.histogram("redlock.lock.hold.duration", holdBuckets,
			"Time from a lock's grant to its release, loss or expiry"),
		lost: b.counter("redlock.locks.lost", "{lock}",
			"Locks their holder tried to keep (renewal, Extend) and lost before their release, by reason"),
		expired: b.counter("redlock.locks.expired", "{lock}",
			"Locks neither renewed nor extended that reached their deadline before their release"),
		held: b.upDownCounter("redlock.locks.held", "{lock}",
			"Locks this client holds"),
		nodeRequests: b.counter("redlock.node.requests", "{request}",
			"Requests to each node, by request and outcome"),
		nodeLatency: b.histogram("redlock.node.request.duration", latencyBuckets,
			"Time to each node's reply, for the requests it served (outcomes ok, held and recovering)"),
	}
	if timeout != nil {
		m.nodeTimeout = b.gauge("redlock.node.timeout", AttrClient.String(client),
			"The per-node timeout of this client's requests at its default TTL: Options.NodeTimeout, raised while replies come late, up to Options.MaxNodeTimeout",
			func() float64 { return timeout().Seconds() })
	}
	m.makeAttrs(nodes)
	return m, errors.Join(b.errs...)
}

// close stops the gauges' reports.
func (m *metrics) close() {
	if m.nodeTimeout != nil {
		m.nodeTimeout.Unregister()
	}
}

// makeAttrs makes the attribute set of every measurement.
func (m *metrics) makeAttrs(nodes []string) {
	set := func(kvs ...attribute.KeyValue) measured {
		opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
		return measured{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	}
	for k := range kindCount {
		call := AttrCall.String(k.String())
		for r := range acquireResults {
			m.acquireAttrs[k][r] = set(call, AttrOutcome.String(r.String()))
		}
		for r := range extendResults {
			m.extendAttrs[k][r] = set(call, AttrOutcome.String(r.String()))
		}
		for r := range releaseResults {
			m.releaseAttrs[k][r] = set(call, AttrOutcome.String(r.String()))
		}
	}
	m.handoffAttrs = [2]measured{set(AttrOutcome.String("not_acquired")), set(AttrOutcome.String("acquired"))}
	for e := range endCount {
		m.holdAttrs[e] = set(AttrOutcome.String(e.String()))
	}
	for r := range reasonCount {
		m.lostAttrs[r] = set(AttrReason.String(r.String()))
	}
	m.nodeAttrs = make([][opCount][outcomeCount]measured, len(nodes))
	m.nodeOpAttrs = make([][opCount]measured, len(nodes))
	for i, name := range nodes {
		node := AttrNode.String(name)
		for op := range opCount {
			m.nodeOpAttrs[i][op] = set(node, AttrOp.String(op.String()))
			for o := range outcomeCount {
				m.nodeAttrs[i][op][o] = set(node, AttrOp.String(op.String()), AttrOutcome.String(o.String()))
			}
		}
	}
}

// measured is the options of a measurement with one attribute set, as
// the slices that Add and Record take, so that passing them allocates
// nothing.
type measured struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// builder creates instruments, collecting the errors.
type builder struct {
	meter metric.Meter
	errs  []error
}

func (b *builder) counter(name, unit, desc string) metric.Int64Counter {
	c, err := b.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		b.errs = append(b.errs, err)
	}
	if c == nil {
		return noop.Int64Counter{}
	}
	return c
}

func (b *builder) upDownCounter(name, unit, desc string) metric.Int64UpDownCounter {
	c, err := b.meter.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		b.errs = append(b.errs, err)
	}
	if c == nil {
		return noop.Int64UpDownCounter{}
	}
	return c
}

// gauge creates a gauge in seconds that reports value with attr at each
// collection, and returns its registration, nil when it could not be
// created. The attribute tells apart the Clients that share a meter.
func (b *builder) gauge(name string, attr attribute.KeyValue, desc string, value func() float64) metric.Registration {
	opt := metric.WithAttributeSet(attribute.NewSet(attr))
	g, err := b.meter.Float64ObservableGauge(name, metric.WithUnit("s"), metric.WithDescription(desc))
	if err != nil {
		b.errs = append(b.errs, err)
	}
	if g == nil {
		return nil
	}
	reg, err := b.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveFloat64(g, value(), opt)
		return nil
	}, g)
	if err != nil {
		b.errs = append(b.errs, err)
		return nil
	}
	return reg
}

func (b *builder) histogram(name string, buckets []float64, desc string) metric.Float64Histogram {
	h, err := b.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(buckets...))
	if err != nil {
		b.errs = append(b.errs, err)
	}
	if h == nil {
		return noop.Float64Histogram{}
	}
	return h
}

// served reports an outcome that is a reply the node computed, whose
// latency is the node's round trip: not a timeout, a refused connection or
// a decision made without it.
func served(o Outcome) bool { return o == OK || o == Held || o == Recovering }

// node records one node's answer to one request.
func (m *metrics) node(ctx context.Context, node int, op Op, a Answer) {
	if node >= len(m.nodeAttrs) {
		return
	}
	m.nodeRequests.Add(ctx, 1, m.nodeAttrs[node][op][a.Outcome].add...)
	if served(a.Outcome) {
		m.nodeLatency.Record(ctx, a.Latency.Seconds(), m.nodeOpAttrs[node][op].record...)
	}
}

// acquired records the end of an acquisition that started at start.
func (m *metrics) acquired(ctx context.Context, kind Kind, r AcquireResult, took time.Duration) {
	m.acquisitions.Add(ctx, 1, m.acquireAttrs[kind][r].add...)
	m.acquireTime.Record(ctx, took.Seconds(), m.acquireAttrs[kind][r].record...)
}

// LockGranted counts a lock this client now holds.
func (t *Telemetry) LockGranted(ctx context.Context) {
	if m := t.metrics; m != nil {
		m.held.Add(ctx, 1)
	}
}

// Handoff counts a release that carried a waiting goroutine's attempt,
// once the attempt concluded.
func (t *Telemetry) Handoff(ctx context.Context, acquired bool) {
	if m := t.metrics; m != nil {
		i := 0
		if acquired {
			i = 1
		}
		m.handoffs.Add(ctx, 1, m.handoffAttrs[i].add...)
	}
}

// lockEnded records the end of a lock held for heldFor; reason is why a
// lost one was lost.
func (m *metrics) lockEnded(heldFor time.Duration, end End, reason Reason) {
	ctx := context.Background()
	switch end {
	case EndLost:
		m.lost.Add(ctx, 1, m.lostAttrs[reason].add...)
	case EndExpired:
		m.expired.Add(ctx, 1)
	}
	m.holdTime.Record(ctx, heldFor.Seconds(), m.holdAttrs[end].record...)
	m.held.Add(ctx, -1)
}

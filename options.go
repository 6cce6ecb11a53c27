package redlock

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redlock-go/redlock/internal/wire"
)

// Defaults used where an Options field is zero. Each one trades something off.
const (
	// defaultTTL is how long a lock lives on the nodes without extension. Longer
	// means fewer extensions, but a crashed holder blocks others for longer.
	defaultTTL = 10 * time.Second
	// defaultNodeTimeout bounds each request to one node while replies come
	// in time (see Options.MaxNodeTimeout). It must be small
	// compared with the TTL so that a dead or paused node costs little of the
	// validity, and large enough for a healthy node's round trip under load.
	defaultNodeTimeout = 50 * time.Millisecond
	// defaultDriftFactor is the clock-drift allowance as a fraction of the TTL
	// (Redlock's 1%): the nodes' clocks may run this much faster than ours.
	defaultDriftFactor = 0.01
	// defaultRecoveryDelay is how long a node that lost its data withholds
	// its vote (see Options.RecoveryDelay). It must be at least the largest
	// TTL in use, so 30 s leaves room for WithTTL up to three times
	// defaultTTL; a longer delay allows longer TTLs but keeps a node that
	// restarted empty out of every quorum for longer.
	defaultRecoveryDelay = 30 * time.Second
	// lossMarginDivisor, minLossMargin and maxLossMarginDivisor set the
	// default loss margin: a tenth of the TTL leaves a holder time to stop
	// while renewal, which extends at a third of the TTL, still has two
	// tries; 100 ms covers a process's reaction on a loaded host; and a
	// fifth of the TTL at most keeps short locks useful. redlock run stops
	// its command by the same rule.
	lossMarginDivisor    = 10
	minLossMargin        = 100 * time.Millisecond
	maxLossMarginDivisor = 5
	// minNodeTimeout is the shortest NodeTimeout accepted: below it even a
	// node on the same host cannot answer, and every request would time
	// out.
	minNodeTimeout = time.Millisecond
	// maxNodeTimeoutDivisor and maxDefaultNodeTimeout set the default
	// MaxNodeTimeout: a quarter of the TTL, so that a grant whose replies
	// took that long keeps three quarters of it less the drift, and at
	// most 400 ms, so that a request to a node of several, which waits
	// for its reply half a second past the node timeout, ends before the
	// adapters' one-second socket timeout, after which a reply is lost
	// anyway and a client library may send the request again.
	maxNodeTimeoutDivisor = 4
	maxDefaultNodeTimeout = 400 * time.Millisecond
	// driftConstant is added to the drift allowance for Redis's 1 ms expiry
	// resolution and for small TTLs.
	driftConstant = 2 * time.Millisecond
)

// defaultRetry is the retry strategy used when Options.Retry is nil: random
// delays growing from 10 ms to at most 200 ms, until the context ends.
var defaultRetry = ExponentialJitter(10*time.Millisecond, 200*time.Millisecond)

// Options configures a Client. The zero value is ready to use; each field's
// comment gives its default.
type Options struct {
	// TTL is the default lock time-to-live, overridden per call by WithTTL.
	// Default 10 s.
	TTL time.Duration
	// NodeTimeout bounds every request to one node while replies come in
	// time; while they come late, the bound rises, up to MaxNodeTimeout.
	// Default 50 ms; at least 1 ms; it is capped at the validity a TTL can
	// give.
	NodeTimeout time.Duration
	// MaxNodeTimeout is how far the per-node timeout rises while replies
	// come late: to twice the longest time a node took lately to reply to
	// a request (late replies to a fan-out already decided included),
	// which halves every second once no reply takes as long; a slow node
	// raises it, and so do the timeouts of a Client's only node, but a
	// silent or failing node of several raises nothing. Replies come late
	// over a slow network, from loaded nodes, or on a host whose cores are
	// all busy, where a reply waits to be read; a timeout held at
	// NodeTimeout would then fail every request. Default a quarter of the
	// lock's TTL and at most 400 ms (never below NodeTimeout): a request
	// to a node of several waits half a second past its timeout for a
	// late reply, within the adapters' one-second socket timeout. Set it
	// to NodeTimeout to keep the timeout fixed.
	MaxNodeTimeout time.Duration
	// DriftFactor is the clock-drift allowance as a fraction of the TTL; 2 ms
	// are always added. Must be in (0, 0.5); 0 means the default, 0.01: the
	// allowance for clock drift is never left out.
	DriftFactor float64
	// Retry paces Acquire's attempts. Default: random pauses growing from
	// 10 ms to at most 200 ms, as ExponentialJitter gives; a pause under a
	// millisecond counts as a millisecond. Acquire always stops when its
	// context ends. A waiter that the nodes queued behind
	// the clients the next release will wake waits between half a second
	// and a second between attempts, if Retry gives less: the release that
	// makes it one of those wakes it (see the package documentation, The
	// algorithm). A waiter for a mutex, or a reader, whose pauses are longer
	// than a second renews its place in line meanwhile, every second,
	// without trying for the key, so that a release still wakes it; a
	// waiter for a permit or a set of keys does not, and loses its place
	// during pauses over two seconds. After an attempt that so many nodes
	// did not answer in time (they timed out, or were too far behind to be
	// sent it) that no quorum could, the pause is between half and all of
	// the time they made it wait, doubling with each such attempt in a row
	// up to a second, if Retry gives less, so that a crowd of waiters does
	// not keep overloaded nodes so; a release announcement still ends it
	// at once.
	Retry RetryStrategy
	// KeyPrefix is prepended to every lock key on the wire. Default none, so
	// that locks taken with redsync or node-redlock on the same key names
	// exclude ours and the other way round. A prefix that begins with the
	// name of one of the library's own keys, which every lock key would then
	// begin with ("redlock:fence:", "redlock:marker"...: see ErrInvalidKey),
	// is refused; a shorter one ("redlock:") is not, and a key that it makes
	// one of those names is refused when locked. The library's own keys
	// (fencing counters, queues, marks, the restart marker) are not
	// prefixed: an ACL user limited to the prefix's keys needs ~redlock:*
	// too, or every call is refused (NOPERM).
	KeyPrefix string
	// MaxExtensions bounds how many times one lock can be extended, by Extend
	// or by renewal; 0 means no bound. A renewing lock that reaches it is
	// lost at its deadline, its error both ErrLockLost and ErrExtendLimit.
	MaxExtensions int
	// RecoveryDelay is how long a node that lost its data, restarted, or
	// failed over to a replica (its restart marker is missing, or was written
	// by another Redis process) withholds its vote, measured by its own clock
	// from the first acquisition that reaches it. Default 30 s. It
	// must be at least the largest TTL any client of the nodes uses, which
	// the Client enforces for its own locks: New, Acquire and Extend reject
	// a longer TTL with ErrInvalidTTL. Work that may outlast it keeps a TTL
	// within it and renews the lock (WithAutoRenew, Do, or Extend in time)
	// rather than taking one long TTL. A longer delay allows longer TTLs, but
	// every client of the same nodes must raise it together, since each one
	// checks only its own TTLs, and a node that lost its data then sits out
	// for longer. All clients of the same nodes should use the same value.
	RecoveryDelay time.Duration
	// LossMargin is how long before its validity deadline (Lock.Until) a
	// lock that was not extended counts as ended: Done closes, Err returns
	// ErrLockLost (or ErrLockExpired for a lock nobody tried to keep: no
	// WithAutoRenew, no Extend) and Do's context is cancelled, so that a
	// holder reacting to them still has this much validity to stop in.
	// Default (0): a tenth of the lock's TTL, at least 100 ms and at most a
	// fifth of the TTL; negative: none, the signals fire at the deadline
	// itself. It is capped at half the TTL.
	LossMargin time.Duration
	// DisableQuarantine turns the restart quarantine off: a node that
	// restarted or failed over votes at once, and the acquire script neither
	// reads nor writes the restart marker. This is safe only when every node
	// keeps acknowledged writes across a crash (appendfsync always) and has
	// no replica that can take over; otherwise a restart can grant a lock
	// that is still held (see SAFETY.md).
	// Default false (quarantine on).
	DisableQuarantine bool
	// DisableFunctions makes the Client run its Lua scripts by EVALSHA
	// only. By default, on a node that is no Redis Cluster and whose Conn
	// has FunctionCaller, it loads them as one Redis 7 function library
	// (FUNCTION LOAD, named "redlock_" and a digest of its code) and calls
	// them by FCALL, which costs the node less per call: the library reads
	// the node's run_id once per process, and defines its functions once.
	// A node that refuses it (Redis before 7.0, an ACL without FCALL or
	// FUNCTION) gets EVALSHA, and is asked again every minute. A loaded
	// library stays on the node, in its snapshots and on its replicas,
	// like any function library: turn this on to keep the nodes' function
	// libraries untouched.
	// Default false (functions where the node takes them).
	DisableFunctions bool
	// WaitReplicas, when above zero, makes a node's grant and extension
	// count only once that many of its replicas confirmed them (Redis WAIT,
	// sent after the script on the same connection, within the per-node
	// timeout). A master that fails over to a replica then hands over the
	// locks it granted. Without it, a replica promoted before it received a
	// lock grants it again, unless the restart quarantine keeps it out (see
	// SAFETY.md). Each adapter's Conn supports it over a single Redis
	// server; New fails with ErrInvalidOptions for a Conn that does not,
	// a Redis Cluster's among them. A node with fewer replicas connected
	// grants and extends nothing until they are, as a node down: set it to
	// at most the replicas each master keeps connected.
	// Default 0 (no wait).
	WaitReplicas int
	// Logger receives what an operator needs to know and no call returns:
	// a lock lost (Warn), a lock nobody tried to keep expired (Debug), a
	// node failing (Warn) and answering again (Info), a node recovering
	// under the restart quarantine (Info), a release that did not reach a
	// quorum (Warn), a release finished or given up in the background.
	// Records mark transitions, not requests: a node that is down logs a
	// few lines per outage (see the package documentation, section
	// Observability). Default nil: nothing is logged.
	Logger *slog.Logger
	// MeterProvider, when set, receives the client's metrics under the
	// instrumentation scope "github.com/redlock-go/redlock": acquisitions,
	// extensions and releases by outcome, wait and hold times, locks lost,
	// expired and held, handoffs, and each node's requests and latency (see
	// the package documentation, section Observability). The global provider
	// is never used. Default nil: no metrics.
	MeterProvider metric.MeterProvider
	// Owner names the holder of every lock this client takes, unless a
	// call sets another with WithOwner: Inspect, List and `redlock inspect`
	// show it beside each grant, with the time the grant began. It goes in
	// the lock's token, so it costs no key and no command. Default: the
	// host name and the process id, "host:1234" (a host name's bytes outside
	// printable ASCII, and spaces, become '_'). 1 to MaxOwnerBytes bytes of
	// printable ASCII other than the space; New refuses others with
	// ErrInvalidOwner.
	Owner string
	// TracerProvider, when set, receives a span for each Acquire,
	// TryAcquire, Extend, Release, ExtendToken and ReleaseToken, a child of
	// the span in the call's context, with the lock's key, TTL, fencing
	// token, attempts and outcome, and an event per node answer. The
	// global provider is never used. Default nil: no spans.
	TracerProvider trace.TracerProvider
}

func (o Options) withDefaults() (Options, error) {
	if o.TTL == 0 {
		o.TTL = defaultTTL
	}
	if o.NodeTimeout == 0 {
		o.NodeTimeout = defaultNodeTimeout
	}
	if o.DriftFactor == 0 {
		o.DriftFactor = defaultDriftFactor
	}
	if o.Retry == nil {
		o.Retry = defaultRetry
	}
	if o.RecoveryDelay == 0 {
		o.RecoveryDelay = defaultRecoveryDelay
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Owner == "" {
		o.Owner = defaultOwner()
	}
	return o, o.check()
}

// check returns an ErrInvalidOptions or ErrInvalidTTL error for the first
// option, defaults filled in, that no lock could use.
func (o Options) check() error {
	switch {
	case o.NodeTimeout < minNodeTimeout:
		return fmt.Errorf("%w: NodeTimeout %s is below %s: no node answers in time", ErrInvalidOptions, o.NodeTimeout, minNodeTimeout)
	case o.MaxNodeTimeout != 0 && o.MaxNodeTimeout < o.NodeTimeout:
		return fmt.Errorf("%w: MaxNodeTimeout %s is below NodeTimeout %s", ErrInvalidOptions, o.MaxNodeTimeout, o.NodeTimeout)
	case !(o.DriftFactor >= 0 && o.DriftFactor < 0.5): // NaN too
		return fmt.Errorf("%w: DriftFactor %g is outside [0, 0.5)", ErrInvalidOptions, o.DriftFactor)
	case o.MaxExtensions < 0:
		return fmt.Errorf("%w: MaxExtensions %d is negative", ErrInvalidOptions, o.MaxExtensions)
	case o.WaitReplicas < 0:
		return fmt.Errorf("%w: WaitReplicas %d is negative", ErrInvalidOptions, o.WaitReplicas)
	case o.RecoveryDelay < 0:
		return fmt.Errorf("%w: RecoveryDelay %s is negative", ErrInvalidOptions, o.RecoveryDelay)
	case wire.Reserved(o.KeyPrefix):
		return fmt.Errorf("%w: KeyPrefix %q begins like the keys the library keeps beside the locks (see ErrInvalidKey): "+
			"every lock key would be refused", ErrInvalidOptions, o.KeyPrefix)
	}
	if err := checkTTL(o.TTL, o.DriftFactor); err != nil {
		return err
	}
	if err := checkOwner(o.Owner, "Options.Owner"); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := checkQuarantineTTL(o.TTL, o); err != nil {
		return err
	}
	if err := checkCounterTTL(o.TTL, o); err != nil {
		return err
	}
	return nil
}

// checkTTL rejects a TTL that Redis cannot keep, or that leaves no validity
// after the drift allowance, once truncated to Redis's millisecond
// resolution. Messages print the TTL as the caller gave it.
func checkTTL(given time.Duration, factor float64) error {
	ttl := given.Truncate(time.Millisecond)
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: %s is below Redis's 1 ms resolution", ErrInvalidTTL, given)
	}
	if d := drift(ttl, factor); ttl <= d {
		return fmt.Errorf("%w: %s leaves no validity after the %s drift allowance", ErrInvalidTTL, ttlText(given), d)
	}
	return nil
}

// checkQuarantineTTL rejects a TTL that the restart quarantine cannot cover:
// a node that lost its data must sit out until every lock it might have
// granted has expired, which RecoveryDelay bounds.
func checkQuarantineTTL(given time.Duration, o Options) error {
	if o.DisableQuarantine || given.Truncate(time.Millisecond) <= o.RecoveryDelay {
		return nil
	}
	return fmt.Errorf("%w: %s is above the %s recovery delay, so a node that restarted without its data "+
		"could vote again while the lock is still valid: for work that may outlast %s, keep the TTL within it and "+
		"renew the lock (WithAutoRenew, Do, or Extend before its deadline); or raise Options.RecoveryDelay to at "+
		"least %s on every client of these nodes together", ErrInvalidTTL, ttlText(given), o.RecoveryDelay,
		o.RecoveryDelay, given.Truncate(time.Millisecond))
}

// checkCounterTTL rejects a TTL whose sum with RecoveryDelay, how long the
// lock's fencing counter outlives it (see wireArgs.counterMillis), is
// beyond a time.Duration: the sum would wrap negative, and every node
// would refuse it.
func checkCounterTTL(given time.Duration, o Options) error {
	if given.Truncate(time.Millisecond) <= math.MaxInt64-o.RecoveryDelay {
		return nil
	}
	return fmt.Errorf("%w: %s plus the %s recovery delay, for which the lock's fencing counter outlives it, "+
		"is beyond the longest time.Duration", ErrInvalidTTL, given, o.RecoveryDelay)
}

// ttlText prints a TTL as the caller gave it, and as Redis keeps it when
// that differs: "2.5ms (2ms at Redis's 1 ms resolution)".
func ttlText(given time.Duration) string {
	if ttl := given.Truncate(time.Millisecond); ttl != given {
		return given.String() + " (" + ttl.String() + " at Redis's 1 ms resolution)"
	}
	return given.String()
}

// LockOption changes one Acquire, TryAcquire, AcquireAll or Do call. The
// With functions make them.
type LockOption interface {
	apply(c *lockConfig)
}

// lockOption is a function as a LockOption.
type lockOption func(*lockConfig)

func (o lockOption) apply(c *lockConfig) { o(c) }

type lockConfig struct {
	ttl       time.Duration
	retry     RetryStrategy
	autoRenew bool
	// limit is the number of permits with WithLimit, 0 for a mutex;
	// limited is set by WithLimit, whatever its argument.
	limit   int
	limited bool
	shared  bool   // WithShared
	owner   string // WithOwner, else Options.Owner
	// named is set by WithOwner, whatever its argument.
	named bool
	// delay is the lock-delay (WithLockDelay): the nodes keep the key this
	// much longer than ttl, which the validity still counts from.
	delay time.Duration
	// nudge makes a waiting Acquire try at once each time it receives,
	// keeping its place in the queue (see withNudge); nil for none.
	nudge <-chan struct{}
	// notify is told each failed attempt of a waiting call
	// (WithRetryNotify); nil for none.
	notify func(error)
}

// WithRetryNotify calls fn with the error of each failed attempt that a
// waiting Acquire or AcquireAll goes on after, in the calling goroutine,
// before it waits for its next attempt: fn must return quickly. The error
// is what the call would return if it gave up then, usually a
// *QuorumError with each node's answer, so that a caller can tell why it
// still waits while it keeps its place in line: ending the call and
// calling again gives up that place. TryAcquire and TryAcquireAll make
// one attempt and never call fn. A nil fn changes nothing.
func WithRetryNotify(fn func(err error)) LockOption {
	return lockOption(func(c *lockConfig) { c.notify = fn })
}

// withNudge makes a waiting Acquire try at once each time nudge receives,
// rather than at its next retry: an election's candidate, when the lead's
// key expires, which no release announces. As every candidate is nudged at
// once, its attempts after the first defer to the clients queued before it
// (see lua/queued_acquire.lua, mode 2): the first in line takes the key.
func withNudge(nudge <-chan struct{}) LockOption {
	return lockOption(func(c *lockConfig) { c.nudge = nudge })
}

// WithTTL sets the lock's time-to-live for this call instead of Options.TTL.
func WithTTL(ttl time.Duration) LockOption {
	return lockOption(func(c *lockConfig) { c.ttl = ttl })
}

// WithAutoRenew keeps the lock alive in the background: it is extended by its
// TTL each time a third of the TTL has passed, until Release. When the
// extensions fail, the lock is declared lost a margin before its validity
// deadline (Options.LossMargin): Done closes and Err returns ErrLockLost.
// A renewal also takes the lock on the nodes that answered without holding
// it, where the key is free, so that the lock does not rest on the bare
// majority that granted it. Do always renews.
func WithAutoRenew() LockOption {
	return lockOption(func(c *lockConfig) { c.autoRenew = true })
}

// WithLimit makes the call take one of limit permits of the named resource
// (a counting semaphore) instead of its lock: at most limit holders at once,
// across every client that names it with the same limit. Permit i is the
// mutex name:permit:i, so the returned Lock is one permit with everything a
// lock has: validity, Extend, auto-renewal, Done, a fencing token (counted
// per permit: Lock.Key names it), Release, which wakes the waiters of the
// semaphore. An expired holder frees its permit by itself. Clients that use
// different limits on one name admit as many holders as the largest limit.
// Acquire tries the permits from a random one on, and waits for the release
// of any of them; this client's goroutines waiting for one semaphore are
// served in the order they called, and across clients the nodes queue the
// waiters of a semaphore in the order they began waiting, keeping a free
// permit for the first in line. limit must be in 1..MaxLimit, and the key
// of the last permit, name:permit:limit, within the 4096 bytes of a key
// (ErrInvalidKey).
func WithLimit(limit int) LockOption {
	return lockOption(func(c *lockConfig) { c.limit, c.limited = limit, true })
}

package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// What the tests read of the package's insides.

// ScriptSources are the library's scripts as sent, for tests that preload
// them on their nodes.
var ScriptSources = func() []string {
	var sources []string
	for _, s := range wire.Scripts {
		sources = append(sources, s.Source)
	}
	return sources
}()

// QueueKeys are the names of the keys that queue the clients waiting for
// a lock key.
func QueueKeys(key string) (queue, deadlines string) { return wire.QueueKeys(key) }

// QueueLasts is how long a place in a key's queue lasts unrenewed.
const QueueLasts = wire.QueueLasts

// WaitingKey is the name of key's waiting mark, outside a Redis Cluster.
func WaitingKey(key string) string { return wire.Layout{}.WaitingKey(key) }

// ID is the client's id in the queues of waiting clients.
func (c *Client) ID() string { return c.id }

// ReclaimScriptSource is the script that takes a held lock on one more
// node as sent, for tests that run it directly.
var ReclaimScriptSource = wire.ReclaimScript.Source

// AcquireScriptSource is the acquire script as sent, for tests that run it
// directly.
var AcquireScriptSource = wire.AcquireScript.Source

// RaiseScriptSource is the script that raises a fencing counter as sent,
// for tests that run it directly.
var RaiseScriptSource = wire.RaiseScript.Source

// ReleaseScriptSource is the release script as sent, for tests that run
// it by hand.
var ReleaseScriptSource = wire.ReleaseScript.Source

// QueuedAcquireScriptSource is the acquire script of a waiting caller
// (Acquire) as sent, for tests that run it directly.
var QueuedAcquireScriptSource = wire.QueuedAcquireScript.Source

// The keys the library keeps beside the locks.
const (
	MarkerKey  = wire.MarkerKey
	ProcessKey = wire.ProcessKey
)

// ReleaseChannel returns the channel on which releases of a lock key are
// announced, by a client with a Redis Cluster node or without one.
func ReleaseChannel(key string, cluster bool) string {
	return wire.Layout{Cluster: cluster}.ReleaseChannel(key)
}

// FenceKey returns the fencing counter's key for a lock key.
func FenceKey(key string) string { return wire.FenceKey(key) }

// ErrNotMarkedReady is the verdict of a failed MarkReady.
var ErrNotMarkedReady = errNotMarkedReady

// DefaultRetry is the retry strategy of a zero Options.
var DefaultRetry = defaultRetry

// WireKey returns the lock key as sent to the nodes, KeyPrefix included.
func (l *Lock) WireKey() string { return l.key }

// TTL returns the time-to-live the lock was acquired with.
func (l *Lock) TTL() time.Duration { return l.ttl }

// LossMarginOf returns how long before its deadline l counts as lost.
func LossMarginOf(l *Lock) time.Duration { return l.margin }

// Extensions returns how many times the lock was extended.
func (l *Lock) Extensions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.extensions
}

// Context is the lock's lost-lock context, as Do gives it.
func (l *Lock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return l.context(parent)
}

// Nodes returns the names of the client's nodes, in order.
func (c *Client) Nodes() []string {
	names := make([]string, len(c.conns))
	for i, conn := range c.conns {
		names[i] = conn.Name()
	}
	return names
}

// Quorum returns how many nodes must agree.
func (c *Client) Quorum() int { return c.quorum }

// Options returns the options in force, defaults filled in.
func (c *Client) Options() Options { return c.opts }

// WithRetry sets the retry strategy for one Acquire.
func WithRetry(s RetryStrategy) LockOption {
	return lockOption(func(c *lockConfig) { c.retry = s })
}

// Jittered waits a uniformly random time in [min, max] before every retry.
func Jittered(min, max time.Duration) RetryStrategy {
	if max < min {
		max = min
	}
	return jittered{min: min, max: max}
}

type jittered struct{ min, max time.Duration }

func (j jittered) NextDelay(int) (time.Duration, bool) {
	return randomBetween(j.min, j.max), true
}

// The adapters' conns over one node address, for the package's internal
// tests: the adapters import this package, so the internal tests cannot
// import them, and adapters_test.go, an external test file compiled into
// the same test binary, sets these before any test runs.
var (
	GoredisConn func(t *testing.T, addr string) Conn
	RueidisConn func(t *testing.T, addr string) Conn
)

// LimitAttempts gives up after attempts attempts in all (the first included).
func LimitAttempts(s RetryStrategy, attempts int) RetryStrategy {
	return limited{s: s, max: attempts}
}

type limited struct {
	s   RetryStrategy
	max int
}

func (l limited) NextDelay(attempt int) (time.Duration, bool) {
	if attempt > l.max {
		return 0, false
	}
	return l.s.NextDelay(attempt)
}

// HasTelemetry reports whether the client records metrics, spans or log
// records.
func (c *Client) HasTelemetry() bool { return c.tel != nil }

// TurnQueued returns how many goroutines of the client wait for their turn
// at key, behind the one whose turn it is.
func (c *Client) TurnQueued(key string) int { return c.waiters.Queued(key) }

// HandoffParked reports whether a goroutine of the client waiting for key
// offers its attempt to the release of the lock held here.
func (c *Client) HandoffParked(key string) bool {
	h, _ := c.waiters.Parked(key).(*handoff)
	return h != nil && h.state.Load() == handoffOffered
}

// ReleaseFailedAttempt releases token's grants of key as the clean-up after
// a failed attempt does, on the nodes marked granted.
func (c *Client) ReleaseFailedAttempt(ctx context.Context, key, token string, ttl time.Duration, granted []bool) {
	acquired := make([]NodeResult, len(granted))
	for i, g := range granted {
		acquired[i].Outcome = OutcomeHeld
		if g {
			acquired[i].Outcome = OutcomeOK
		}
	}
	c.releaseEverywhere(ctx, key, token, ttl, nil, acquired, make([]acquireReply, len(granted)), false)
}

// Listening returns how many of the client's waiters listen for the
// release announcements of the lock key key.
func (c *Client) Listening(key string) int {
	if c.waker == nil {
		return 0
	}
	return c.waker.Waiting(c.keys.ReleaseChannel(key))
}

// ScriptNames names each of the library's scripts, by its source as sent:
// the function of lua/ it runs, or "batch".
var ScriptNames = func() map[string]string {
	names := map[string]string{}
	for _, s := range wire.Scripts {
		names[s.Source] = s.Name()
	}
	return names
}()

// FenceKeyIn returns the fencing counter's key for a lock key, by a client
// with a Redis Cluster node or without one.
func FenceKeyIn(key string, cluster bool) string { return wire.Layout{Cluster: cluster}.FenceKey(key) }

// QueueKeyIn returns the name of the queue of clients waiting for a lock
// key, by a client with a Redis Cluster node or without one.
func QueueKeyIn(key string, cluster bool) string {
	return wire.QueuePrefix + wire.Layout{Cluster: cluster}.Tag(key) + key
}

// LeaveQueues takes the client out of the queues of keys where its entry
// is the one made at since, in microseconds on its clock.
func (c *Client) LeaveQueues(ctx context.Context, keys []string, since string) {
	c.leaveQueues(ctx, c.id, keys, since, c.opts.TTL)
}

// FunctionLibrary is the library's scripts as one function library, as
// loaded by FUNCTION LOAD, for tests that preload it on their nodes.
var FunctionLibrary = wire.Library

// FunctionLibraryName is FunctionLibrary's name.
var FunctionLibraryName = wire.LibraryName

// FunctionNames names each of the library's scripts by the name of its
// function in FunctionLibrary: the function of lua/ it runs, or "batch".
var FunctionNames = func() map[string]string {
	names := map[string]string{}
	for _, s := range wire.Scripts {
		names[s.Function] = s.Name()
	}
	return names
}()

// KeepPlace renews this client's place in the queue of name, taken by a
// call that began waiting at since (see keepPlaces).
func (c *Client) KeepPlace(ctx context.Context, name, since string) {
	c.keepPlaces(ctx, c.id, []string{c.opts.KeyPrefix + name}, since)
}

// PaceAfterSplit sets this client's pause on name as after its TryAcquire
// of name, which took took, failed with err (see splitPause), and returns
// the pause.
func (c *Client) PaceAfterSplit(name string, took time.Duration, err error) time.Duration {
	return c.splitPause(c.opts.KeyPrefix+name, took, err)
}

// PacedFor returns how long this client's TryAcquire of name is still to
// make no attempt.
func (c *Client) PacedFor(name string) time.Duration {
	return c.tryPacing.left(c.opts.KeyPrefix + name)
}

// RecentReplyTime is the longest time the client's nodes took lately to
// answer (see Options.MaxNodeTimeout).
func (c *Client) RecentReplyTime() time.Duration { return c.nodes.RecentReplyTime() }

// NodeTimeoutFor is the per-node timeout the client's next request for a
// lock of ttl would have.
func (c *Client) NodeTimeoutFor(ttl time.Duration) time.Duration { return c.nodeTimeout(ttl) }

// RememberMissedRelease remembers token's release of key as missed by the
// nodes marked in missed, as a release that went unanswered there does.
func (c *Client) RememberMissedRelease(key, token string, ttl time.Duration, missed []bool) {
	results := make([]NodeResult, len(missed))
	for i, m := range missed {
		results[i].Outcome = OutcomeOK
		if m {
			results[i].Outcome = OutcomeTimeout
		}
	}
	c.rememberLeftovers(key, token, ttl, results)
}

// RememberUnswept remembers token's release of key as missed by the nodes
// marked in missed, as RememberMissedRelease does, without starting the
// sweep: only an attempt that a node refuses clears it then. The client
// takes its leftovers as swept from then on, and starts no sweep later.
func (c *Client) RememberUnswept(key, token string, ttl time.Duration, missed []bool) {
	c.leftovers.add(key, token, missed, ttl)
}

// Leftovers returns how many tokens the client remembers as released where
// a node missed it.
func (c *Client) Leftovers() int { return int(c.leftovers.count.Load()) }

// PermitKey is the key of a semaphore's permit i, from 1.
func PermitKey(name string, i int) string { return wire.PermitKey(name, i) }

// StartAndStopRenewal starts the lock's automatic renewal and stops it at
// once, before its goroutine ran when the caller holds the only P.
func (l *Lock) StartAndStopRenewal() {
	l.startRenewal()
	l.stopRenewal()
}

// Closing reports that Close has begun.
func (c *Client) Closing() bool { return c.closing() }

// Crash cuts the Client's connections, then closes it, as a process that
// dies does: nothing more reaches the nodes, and its places in the queues
// stay until they lapse (QueueLasts).
func (c *Client) Crash() {
	c.nodes.Close(time.Second)
	c.Close()
}

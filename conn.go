package redlock

import (
	"context"
	"time"
)

// Conn is one independent Redis master as the Client sees it: one server, a
// Sentinel-managed master, or a whole Redis Cluster. The adapters in the
// goredis and rueidis packages implement it over those clients; their Dial
// functions build them from node URLs.
//
// An adapter over another client (valkey-go, a proxy's) needs only Conn's
// four methods; ExampleConn shows one. A Conn must be safe for concurrent
// use, and must return as soon as ctx is done where the underlying client
// allows it (see ContextHonourer). Replies are decoded as: integer → int64,
// simple or bulk string → string, array → []any, nil → (nil, nil). Server
// errors are returned as errors; an error inside an array is an error value
// in the slice (the Client sends the requests of concurrent calls in one
// script call, which replies with an array holding each request's reply or
// error).
//
// A Conn may also have optional capabilities, each an interface of its own
// that New looks for by a type assertion:
//
//   - Listener: waiters wake as soon as a lock is released; without it,
//     they poll at their retry delays.
//   - ReplicaWaiter: a script, then WAIT, on one connection;
//     Options.WaitReplicas needs it.
//   - ClusterConn: whether the Conn reaches a Redis Cluster; without it,
//     it reaches none.
//   - ContextHonourer: whether the Conn returns at its context's deadline;
//     without it, it must.
//   - FunctionCaller: the scripts run as Redis 7 functions, by FCALL;
//     without it, by EVALSHA.
//   - ReadOnlyEvaler: on a Redis Cluster, the reads that write nothing
//     run by EVALSHA_RO; without it, by EVALSHA.
//
// Both adapters have all six, and assert them at compile time, as an
// adapter should for those it implements:
//
//	var _ redlock.Listener = (*Conn)(nil)
//
// A Conn that wraps another by embedding it as a Conn has none of the
// wrapped one's capabilities: it must define those it keeps.
type Conn interface {
	// Name identifies the node in errors and duplicate checks, typically its
	// address. It must not contain credentials.
	Name() string
	// Do sends one command and returns its decoded reply.
	Do(ctx context.Context, args ...string) (any, error)
	// EvalSHA runs a Lua script by EVALSHA sha1, and by EVAL source when the
	// server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
	EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error)
	// Close releases the connection resources.
	Close() error
}

// Listener is the optional capability of a Conn that can hold a pub/sub
// connection. The Client then wakes a waiting Acquire as soon as the lock
// it waits for is released, instead of at its next retry; over Conns
// without it, waiters only poll.
type Listener interface {
	// Listen holds one subscription connection (over a Redis Cluster, one
	// per master) until ctx ends or a connection fails, and returns why. It
	// blocks. It subscribes to each channel received from subscribe,
	// unsubscribes from each one received from unsubscribe, and calls
	// onMessage with the channel and payload of every message, from one
	// goroutine at a time. Once the node confirmed a subscription, it
	// calls onMessage with the channel and an empty payload, which no
	// announcement has: the Client then tells the waiters that listened
	// before to try again, as a release announced while the subscription
	// was on its way went unheard. A Listen that does not leaves them to
	// their retry delays in that case.
	//
	// A subscription can end without the Client asking: a connection
	// fails, or a Redis Cluster ends it (sunsubscribe) because the
	// channel's slot moved in a resharding or a failover. Listen must then
	// return an error: the Client calls it again after a pause and
	// subscribes the channels still awaited, and meanwhile its waiters try
	// at their retry delays. A lost subscription costs latency, never
	// safety.
	//
	// A Redis Cluster node (see ClusterConn) announces releases by
	// SPUBLISH, on shard channels that carry the tag of the lock key's
	// slot ("redlock:released:{tag}" followed by the key), which only the
	// shard serving that slot hears. Over a cluster, Listen must therefore
	// subscribe by SSUBSCRIBE, each channel on the master that serves its
	// slot, and merge what those connections receive into onMessage. A
	// cluster without SPUBLISH (Redis before 7.0) announces by PUBLISH on
	// the same channels; there Listen should subscribe by SUBSCRIBE, as
	// both adapters do: from the first channel on when a node's COMMAND
	// INFO lacks SSUBSCRIBE, or else once SSUBSCRIBE proved unknown.
	Listen(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error
}

// ReplicaWaiter is the optional capability of a Conn that can run a script
// and then Redis WAIT on the same connection. Options.WaitReplicas needs it:
// with WaitReplicas set, New refuses a Conn without it (ErrInvalidOptions).
type ReplicaWaiter interface {
	// EvalSHAWait runs a script as EvalSHA does, then WAIT replicas timeout
	// on the same connection, and returns the script's reply and the number
	// of replicas that confirmed the connection's writes within timeout
	// (WAIT's reply). It returns by ctx's end: a server ends a WAIT only at
	// its first tick past the timeout, which may come later, and a script
	// that ran then counts as confirmed by 0 replicas. A Conn that cannot
	// do so at all (a cluster's) returns an error.
	EvalSHAWait(ctx context.Context, replicas int, timeout time.Duration, sha1, source string, keys []string, args ...string) (v any, acked int64, err error)
}

// ClusterConn is the optional capability of a Conn that may reach a Redis
// Cluster, all of it as one Redlock node. A Conn without it reaches no
// cluster.
type ClusterConn interface {
	// IsCluster reports whether the Conn reaches a Redis Cluster. The
	// Client then keeps every key it needs for a lock in the lock key's
	// hash slot, and sends each request by itself, since one script call
	// cannot touch two slots. Such a Conn follows MOVED and ASK
	// redirections itself, and finds the master that serves a slot after a
	// failover (the goredis adapter reloads its client's slot map when a
	// request gets no reply).
	IsCluster() bool
}

// ContextHonourer is the optional capability of a Conn that may not return
// at its context's deadline. A Conn without it must return at the deadline.
//
// The Client never waits on a node longer than its per-node timeout either
// way: it asks every node of two or more from a goroutine of its own, and
// a lone node from the caller's goroutine, saving a goroutine switch per
// request, only when its Conn returns at the deadline. A node of two or
// more gets a context that ends half a second after the per-node timeout,
// and the goroutine waits for the reply meanwhile: a Conn that gives a
// request up at its deadline closes the connection (rueidis, go-redis with
// ContextTimeoutEnabled), and a node slower than the per-node timeout
// would cost a new connection per request.
type ContextHonourer interface {
	// HonoursContext reports whether the Conn returns at its context's
	// deadline: false for the goredis adapter over a go-redis client with
	// ContextTimeoutEnabled off.
	HonoursContext() bool
}

// FunctionCaller is the optional capability of a Conn that can call a Redis
// function by FCALL. The Client then runs its scripts as functions of one
// library, which it loads with Conn.Do (FUNCTION LOAD) where a node lacks
// it, on every node that is no Redis Cluster, unless
// Options.DisableFunctions; over a Conn without it, and on a node that
// refuses FCALL or FUNCTION LOAD, it runs them by EVALSHA.
type FunctionCaller interface {
	// FCall calls the function by FCALL function numkeys keys... args...
	// and returns its decoded reply, as EvalSHA does.
	FCall(ctx context.Context, function string, keys []string, args ...string) (any, error)
}

// ReadOnlyEvaler is the optional capability of a Conn that can run a script
// that writes nothing by EVALSHA_RO (Redis 7.0 and later), which a CLIENT
// PAUSE … WRITE does not hold back, as it holds back EVALSHA. The Client
// runs its reads (Inspect, List, Check) so on a Redis Cluster, where it
// does not run them as functions flagged no-writes. A node that refuses
// EVALSHA_RO (Redis 6.2, an ACL without it) gets EVALSHA instead.
type ReadOnlyEvaler interface {
	// EvalSHARO runs a script that writes nothing by EVALSHA_RO sha1, and by
	// EVAL_RO source when the server answers NOSCRIPT, on the master that
	// holds its keys, never a replica: a Conn whose client may send
	// read-only commands to replicas runs it by EVALSHA instead.
	EvalSHARO(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error)
}

// isRedisCluster reports whether conn reaches a Redis Cluster.
func isRedisCluster(conn Conn) bool {
	c, ok := conn.(ClusterConn)
	return ok && c.IsCluster()
}

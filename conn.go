package redlock

import (
	"context"
	"time"
)

// Conn is one independent Redis master as the Client sees it. The adapters in
// the goredis and rueidis packages implement it over those clients; their
// Dial functions build them from node URLs.
//
// A Conn must be safe for concurrent use. It must return as soon as ctx is done
// where the underlying client allows it. The Client never waits on a node
// longer than its per-node timeout either way: a single node is asked from
// the caller's goroutine, to save a goroutine switch per request, only when
// its Conn returns at ctx's deadline, which a Conn that may not do says by
// the method
//
//	HonoursContext() bool
//
// returning false (the goredis adapter over a go-redis client with
// ContextTimeoutEnabled off); it is then asked from a goroutine of its own,
// as every node of two or more is.
//
// Replies are decoded as: integer → int64, simple or bulk string → string,
// array → []any, nil → (nil, nil). Server errors are returned as errors; an
// error inside an array is an error value in the slice (the Client sends
// the requests of concurrent calls in one script call, which replies with
// an array holding each request's reply or error).
//
// A Conn that can hold a pub/sub connection also has the method
//
//	Listen(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error
//
// which holds one subscription connection (over a Redis Cluster, see
// below, one per master) until ctx ends or a connection fails, and returns
// why. It blocks. It subscribes to each channel received
// from subscribe, unsubscribes from each one received from unsubscribe, and
// calls onMessage with the channel and payload of every message, from one
// goroutine at a time. The Client then wakes a waiting Acquire as soon as
// the lock it waits for is released, instead of at its next retry; over
// Conns without it, waiters only poll. Both adapters have it.
//
// A Redis Cluster node (see IsCluster below) announces releases by
// SPUBLISH, on shard channels that carry the tag of the lock key's slot
// ("redlock:released:{tag}" followed by the key), which only the shard
// serving that slot hears, where PUBLISH would reach every node of the
// cluster. Over a cluster, Listen must therefore subscribe by SSUBSCRIBE,
// each channel on the master that serves its slot, and merge what those
// connections receive into onMessage. A subscription can end without the
// Client asking: a master's connection fails, or the cluster ends it
// (sunsubscribe) because the channel's slot moved in a resharding or a
// failover. Listen must then return an error: the Client calls it again
// after a pause and subscribes the channels still awaited, and meanwhile
// its waiters try at their retry delays. A lost subscription costs latency,
// never safety. A cluster without SPUBLISH (Redis before 7.0) announces by
// PUBLISH on the same channels; there Listen should subscribe by SUBSCRIBE,
// as both adapters do: from the first channel on when a node's COMMAND
// INFO lacks SSUBSCRIBE, or else once SSUBSCRIBE proved unknown.
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

// A Conn that can run a script and then Redis WAIT on the same connection
// also has the method
//
//	EvalSHAWait(ctx context.Context, replicas int, timeout time.Duration, sha1, source string, keys []string, args ...string) (v any, acked int64, err error)
//
// which returns the script's reply as EvalSHA does, and the number of
// replicas that confirmed the connection's writes within timeout (WAIT's
// reply). Options.WaitReplicas needs it; both adapters have it.
type replicator interface {
	EvalSHAWait(ctx context.Context, replicas int, timeout time.Duration, sha1, source string, keys []string, args ...string) (any, int64, error)
}

// A Conn that reaches a Redis Cluster, all of it as one Redlock node, also
// has the method
//
//	IsCluster() bool
//
// which returns true. The Client then keeps every key it needs for a lock
// in the lock key's hash slot (see wire.Layout), and sends each request by
// itself, since one script call cannot touch two slots. Both adapters have
// it. Such a Conn follows MOVED and ASK redirections itself, and finds the
// master that serves a slot after a failover (the goredis adapter reloads
// its client's slot map when a request gets no reply).
type clusterer interface {
	IsCluster() bool
}

// isRedisCluster reports whether conn reaches a Redis Cluster.
func isRedisCluster(conn Conn) bool {
	c, ok := conn.(clusterer)
	return ok && c.IsCluster()
}

// honoursContext reports whether conn returns at its context's deadline,
// as a Conn without the method HonoursContext must (see Conn).
func honoursContext(conn Conn) bool {
	c, ok := conn.(interface{ HonoursContext() bool })
	return !ok || c.HonoursContext()
}

// notifier is a Conn that can hold a pub/sub connection (see Conn).
type notifier interface {
	Listen(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error
}

// Package nodes asks the Redis nodes of a client: it sends one request to
// every node at once and collects the answers until they settle it (the
// fan-out), with a deadline per node; it queues each node's requests and
// lets the requests of concurrent calls share one script call (the pipe);
// and it holds a request back on a node until that node answered the
// earlier request that it must not overtake (the lagging order). It knows
// nothing of locks: what a reply means is the caller's to say.
package nodes

import (
	"context"
	"time"
)

// Conn is what the package needs of a node's connection: the root
// package's Conn has it, and the adapters implement it.
type Conn interface {
	// Name identifies the node in results.
	Name() string
	// EvalSHA runs a script by EVALSHA, and by EVAL when the node answers
	// NOSCRIPT.
	EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error)
	// Close releases the connection's resources.
	Close() error
}

// replicaWaiter is a Conn that runs a script and then WAIT on the same
// connection.
type replicaWaiter interface {
	EvalSHAWait(ctx context.Context, replicas int, timeout time.Duration, sha1, source string, keys []string, args ...string) (any, int64, error)
}

// IsCluster reports whether conn reaches a Redis Cluster: a Conn with the
// method IsCluster that returns true.
func IsCluster(conn Conn) bool {
	c, ok := conn.(interface{ IsCluster() bool })
	return ok && c.IsCluster()
}

// honoursContext reports whether conn returns at its context's deadline:
// true unless it has the method HonoursContext and that returns false.
func honoursContext(conn Conn) bool {
	c, ok := conn.(interface{ HonoursContext() bool })
	return !ok || c.HonoursContext()
}

// Within runs do, a request on conn under ctx, and returns at ctx's end at
// the latest: when conn does not honour its context (see honoursContext),
// do goes on in the background and its reply is dropped.
func Within(ctx context.Context, conn Conn, do func(context.Context) (any, error)) (any, error) {
	if honoursContext(conn) {
		return do(ctx)
	}
	type reply struct {
		v   any
		err error
	}
	replies := make(chan reply, 1)
	go func() {
		v, err := do(ctx)
		replies <- reply{v, err}
	}()
	select {
	case r := <-replies:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

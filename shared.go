package redlock

import (
	"context"

	"github.com/redlock-go/redlock/internal/telemetry"
)

// A read-write lock on a name is its mutex, which writers take (Acquire
// without WithShared), and its readers (WithShared), kept at the same key
// on each node as a sorted set of their tokens by expiry (lua/readers.lua):
// a writer's SET NX fails while a reader holds the key, and a reader is
// refused while the key holds a writer's token. A writer that waits
// (Acquire) is queued on the nodes like any refused Acquire, and readers are
// refused while a writer waits: the readers that hold the key drain, the
// last one's release wakes the writer, and a stream of readers cannot
// starve it. Between writers, readers waiting get in when a writer's
// release names no other waiting writer. A reader and a writer exclude each
// other by the Redlock argument: both need a majority of nodes, and a node
// grants only one kind at a time.

// WithShared makes the call take the named lock shared, as a reader of a
// read-write lock: any number of readers hold it at once, and no writer,
// which takes it by the same name without WithShared. A writer waiting in
// Acquire keeps new readers out until it got the lock (writers first), so
// readers cannot starve it. A reader's Lock has everything a lock has:
// validity, Extend, auto-renewal, Done, Release, and a fencing token from
// the same counter as the writers' (see Lock.Fence for how a resource
// compares them).
func WithShared() LockOption {
	return lockOption(func(c *lockConfig) { c.shared = true })
}

// acquireShared takes the lock key shared: once, or until ctx ends. This
// client's readers of one key try at once, and a release wakes them all:
// they do not split votes among themselves.
func (c *Client) acquireShared(ctx context.Context, key string, cfg lockConfig, once bool, call *telemetry.Call) (*Lock, error) {
	try := func() (*Lock, error) {
		lock, err := c.attemptShared(ctx, key, cfg.ttl, cfg.autoRenew)
		noteAttempt(call, lock, err)
		return lock, err
	}
	r := repeated{c: c, ctx: ctx, cfg: cfg, key: key, keys: func() []string { return []string{key} }, attempt: try}
	return r.acquire(once)
}

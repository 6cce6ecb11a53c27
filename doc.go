// Package redlock is a distributed lock over N independent Redis masters,
// implementing the Redlock algorithm; with one node it is the single-instance
// Redis lock.
//
// # Use
//
//	client, err := redlock.Dial(ctx, []string{"redis://a:6379", "redis://b:6379", "redis://c:6379"}, nil)
//	...
//	err = client.Do(ctx, "orders:42", func(ctx context.Context) error {
//		// Runs while the lock is held and renewed; ctx is cancelled if it is lost.
//		return process(ctx)
//	})
//
// Acquire blocks until the lock is acquired or its context ends; TryAcquire
// makes one attempt. A Lock can be extended, renewed in the background
// (WithAutoRenew), watched (Done, Err, Context) and released. Failures wrap
// sentinel errors (ErrNotAcquired, ErrLockLost, ErrNotHeld, ...) in a
// *QuorumError that says what each node answered.
//
// # The algorithm
//
// An acquisition sends SET key token NX PX ttl to every node at once, with a
// per-node timeout (Options.NodeTimeout) small against the TTL. It succeeds
// when at least N/2+1 nodes granted it and the validity left is positive:
//
//	validity = ttl - elapsed - (ttl*DriftFactor + 2ms)
//
// where elapsed comes from the monotonic clock, measured from before the
// first request. Otherwise the key is deleted on every node, answered or
// not, by a script that deletes it only while it holds this token. The token
// is 20 random bytes from crypto/rand, fresh for every attempt. Extension and
// release are compare-and-act scripts sent by EVALSHA. The key on the wire is
// the name as given (plus an optional Options.KeyPrefix) holding a random
// string, as redsync and node-redlock write it, so locks taken by those
// libraries on the same nodes and names exclude ours, and ours theirs.
//
// # Safety model
//
// At most one client holds a lock during its validity (Lock.Until) provided
// that:
//
//   - the nodes' clocks run at most DriftFactor (1%) faster than the client's
//     monotonic clock, and no node's wall clock jumps: Redis expires keys by
//     wall-clock time, so a forward jump on a node expires a key early;
//   - a node does not lose keys it acknowledged: it does not restart without
//     its data (use appendfsync always, or keep a restarted node out of every
//     quorum for longer than the largest TTL), and no maxmemory-policy can
//     evict keys (use noeviction);
//   - the holder stops touching the protected resource by the validity
//     deadline. A process pause (GC, SIGSTOP, swapping) or a delayed packet
//     after that deadline breaks this, and no lock service can prevent it by
//     itself: the protected resource must check a fencing token.
//
// Done, Context and Do's context signal the loss of a lock by a local timer
// at the validity deadline at the latest, not when a server notices. While
// a majority of nodes is up, locks can be acquired and released; a lock whose
// holder crashed becomes free when its TTL passes, so a partition costs up to
// one TTL of availability.
package redlock

package redlock

import "time"

// The names the library uses on every node beside the lock keys, which are
// the names given (plus Options.KeyPrefix), as redsync and node-redlock
// write them.

// markerKey is the restart marker every node keeps, without a TTL, while the
// restart quarantine is on. It holds the node's TIME in microseconds when the
// first acquisition found it missing, or "0" once MarkReady declared the node
// ready. A node is recovering, and withholds its vote, while its clock is less
// than Options.RecoveryDelay past the marker's time; a node without the marker
// lost its data (or never served a lock) and starts recovering at the next
// acquisition. The key is the same for every Options.KeyPrefix.
const markerKey = "redlock:marker"

// processKey holds, beside markerKey, the run_id of the Redis process that
// wrote the marker. A node whose process is another one (it restarted and
// reloaded a snapshot or an AOF, or a replica took over) has not kept every
// lock it granted, whatever its data set says, and starts a new quarantine.
// The key is the same for every Options.KeyPrefix.
const processKey = "redlock:process"

// fencePrefix starts every fencing counter key; lock keys must not.
const fencePrefix = "redlock:fence:"

// fenceKey returns the name of the fencing counter kept on every node beside
// the lock key key (the key on the wire, Options.KeyPrefix included):
// "redlock:fence:" + key. It holds the last fencing token the node handed out
// for key, as a decimal integer, and expires the lock's TTL plus
// Options.RecoveryDelay after the last acquisition (see
// wireArgs.counterMillis). Lock keys must not begin with "redlock:fence:".
func fenceKey(key string) string { return fencePrefix + key }

// releaseChannelPrefix followed by a lock key names the pub/sub channel on
// which releases of the key are announced; on a Redis Cluster, the slot tag
// of the key comes between them (see layout.releaseChannel). The release
// script appends the key, so that a release does not build the name.
const releaseChannelPrefix = "redlock:released:"

// queuePrefix and queueDeadlinePrefix start the names of the two keys that
// queue the clients waiting for a lock key (see queueKeys).
const (
	queuePrefix         = "redlock:queue:"
	queueDeadlinePrefix = "redlock:queue-until:"
)

// queueKeys returns the names of the keys that queue the clients waiting for
// the lock key key: "redlock:queue:" + key, a sorted set of client ids by the
// time each began waiting, and "redlock:queue-until:" + key, a hash of each
// client id to the time (on that client's clock, in microseconds) past which
// its entry is stale. A client enters the queue when its attempt is refused,
// and leaves it on every node with its release of the lock it won, which
// wakes the first two clients in line (see waker). Both keys expire
// queueLasts after the last refusal, so nothing stays behind a key nobody
// waits for. The two names
// share one allocation.
func queueKeys(key string) (queue, deadlines string) {
	s := queuePrefix + key + queueDeadlinePrefix + key
	return s[:len(queuePrefix)+len(key)], s[len(queuePrefix)+len(key):]
}

// queueLasts is how long a client's place in a key's queue lasts without
// being renewed by another refused attempt: well above the retry delays of
// a client that waits, so that it keeps its place, and short enough that a
// client that stopped waiting without taking the key is not woken in vain
// for long.
const queueLasts = 2 * time.Second

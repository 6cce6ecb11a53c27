package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// markerKey is the restart marker every node keeps, without a TTL, while the
// restart quarantine is on. It holds the node's TIME in microseconds when the
// first acquisition found it missing, or "0" once MarkReady declared the node
// ready. A node is recovering, and withholds its vote, while its clock is less
// than Options.RecoveryDelay past the marker's time; a node without the marker
// lost its data (or never served a lock) and starts recovering at the next
// acquisition. The key is the same for every Options.KeyPrefix.
const markerKey = "redlock:marker"

// recoveringRound is the precision of the time left in error messages.
const recoveringRound = 100 * time.Millisecond

// checkQuarantineTTL rejects a TTL that the restart quarantine cannot cover:
// a node that lost its data must sit out until every lock it might have
// granted has expired, which RecoveryDelay bounds.
func checkQuarantineTTL(ttl time.Duration, o Options) error {
	if o.DisableQuarantine || ttl <= o.RecoveryDelay {
		return nil
	}
	return fmt.Errorf("%w: %s is above the %s recovery delay, so a node that restarted without its data "+
		"could vote again while the lock is still valid: raise Options.RecoveryDelay", ErrInvalidTTL, ttl, o.RecoveryDelay)
}

// checkLockTTL applies every rule on the TTL of one lock operation.
func (c *Client) checkLockTTL(ttl time.Duration) error {
	if err := checkTTL(ttl, c.opts.DriftFactor); err != nil {
		return err
	}
	return checkQuarantineTTL(ttl, c.opts)
}

// MarkReady declares every node ready to vote at once: it sets markerKey to
// "0" on each node where the marker is missing or the node is recovering, and
// leaves the others alone. Each node gets Options.NodeTimeout; MarkReady
// blocks until every node answered or timed out.
//
// MarkReady is safe only for a brand-new, empty deployment, or when no lock
// can be outstanding (every client stopped for longer than the largest TTL):
// a node that restarted without its data and is marked ready can grant a lock
// that the other nodes still hold for someone else. New and goredis.Dial never
// call it.
//
// It returns nil when every node is ready, and otherwise a *QuorumError with
// Op "mark ready" and each node's outcome, wrapping ctx's error if ctx
// ended.
func (c *Client) MarkReady(ctx context.Context) error {
	keys := []string{markerKey}
	delay := strconv.FormatInt(c.opts.RecoveryDelay.Microseconds(), 10)
	mark := &request{script: markReadyScript, keys: keys, args: []string{delay}, decode: decodeFunc(func(_ int, v any) (any, error) {
		if _, ok := v.(int64); !ok {
			return nil, fmt.Errorf("redlock: unexpected reply to the mark-ready script: %v", v)
		}
		return v, nil
	})}
	answered := func(any) bool { return true }
	results, ok := c.fanout(ctx, c.opts.NodeTimeout, mark, answered, func(int, int) bool { return false })
	if ok == len(c.conns) {
		return nil
	}
	return &QuorumError{Op: "mark ready", Key: markerKey, OK: ok, Quorum: len(c.conns), Nodes: results,
		Err: errNotMarkedReady, Cause: ctx.Err()}
}

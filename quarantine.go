package redlock

import (
	"context"
	"fmt"
	"strconv"
)

// MarkReady declares every node ready to vote at once: it sets the restart
// marker to "0" on each node where the marker is missing or the node is recovering, and
// leaves the others alone. Each node gets the larger of Options.NodeTimeout
// and 3 s (an operator's call, not a lock operation); MarkReady blocks
// until every node answered or timed out.
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
	if err := checkContext(ctx); err != nil {
		return err
	}
	keys := []string{markerKey, processKey}
	delay := strconv.FormatInt(c.opts.RecoveryDelay.Microseconds(), 10)
	mark := &request{script: markReadyScript, keys: keys, args: []string{delay}, decode: decodeFunc(func(_ int, v any) (any, error) {
		if _, ok := v.(int64); !ok {
			return nil, fmt.Errorf("redlock: unexpected reply to the mark-ready script: %v", v)
		}
		return v, nil
	})}
	answered := func(any) bool { return true }
	results, ok := c.fanout(ctx, c.operatorTimeout(), mark, answered, func(int, int) bool { return false })
	if ok == len(c.conns) {
		return nil
	}
	return &QuorumError{Op: "mark ready", Key: markerKey, OK: ok, Quorum: len(c.conns), Nodes: results,
		Err: errNotMarkedReady, Cause: ctx.Err()}
}

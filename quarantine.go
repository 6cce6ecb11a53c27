package redlock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/redlock-go/redlock/internal/telemetry"
)

// MarkReady declares every node ready to vote at once: it sets the restart
// marker to "0" on each node where the marker is missing or the node is
// recovering, and leaves the others alone. Each node gets the larger of
// Options.NodeTimeout and 3 s (an operator's call, not a lock operation);
// MarkReady blocks until every node answered or timed out.
//
// MarkReady is safe only for a brand-new, empty deployment, or when no lock
// can be outstanding (every client stopped for longer than the largest TTL):
// a node that lost its data and is marked ready can grant a lock that the
// other nodes still hold for someone else. So it refuses, unless force is
// true, a node that restarted or failed over and has not sat out its
// recovery delay (NodeState.Restarted); a node with no marker at all cannot
// be told from a new one, and is marked. New and the adapters'
// Dial functions never call it.
//
// It returns nil when every node is ready, and otherwise a *QuorumError with
// Op "mark ready" and each node's outcome (a refused node's is an error
// saying why), wrapping ctx's error if ctx ended.
func (c *Client) MarkReady(ctx context.Context, force bool) error {
	if err := checkContext(ctx); err != nil {
		return err
	}
	keys := []string{markerKey, processKey}
	delay := strconv.FormatInt(c.opts.RecoveryDelay.Microseconds(), 10)
	forced := "0"
	if force {
		forced = "1"
	}
	mark := &request{script: markReadyScript, keys: keys, args: []string{delay, forced}, decode: decodeFunc(func(_ int, v any) (any, error) {
		if _, ok := v.(int64); !ok {
			return nil, fmt.Errorf("redlock: unexpected reply to the mark-ready script: %v", v)
		}
		return v, nil
	})}
	if c.keys.cluster {
		return c.markSlotsReady(ctx, mark)
	}
	return c.markReady(ctx, mark)
}

// markReady sends mark, a mark-ready request, to every node. A node that
// did not answer in time is asked once more: its first request may have
// landed (a cold connection, a loaded node), and marking a ready node again
// changes nothing, so the second answer tells what the first could not.
func (c *Client) markReady(ctx context.Context, mark *request) error {
	answered := func(any) bool { return true }
	results, ok := c.fanout(ctx, c.operatorTimeout(), mark, answered, func(int, int) bool { return false })
	if ok < len(c.conns) && ctx.Err() == nil && slices.ContainsFunc(results, func(r NodeResult) bool { return r.Outcome == OutcomeTimeout }) {
		results, ok = c.fanout(ctx, c.operatorTimeout(), mark, answered, func(int, int) bool { return false })
	}
	c.observeNodes(ctx, nil, telemetry.OpMarkReady, results)
	if ok == len(c.conns) {
		return nil
	}
	return &QuorumError{Op: "mark ready", Key: mark.keys[0], OK: ok, Quorum: len(c.conns), Nodes: results,
		Err: errNotMarkedReady, Cause: ctx.Err()}
}

// markSlotsReady marks every hash slot's restart marker ready, for a client
// with a Redis Cluster node (see layout), a few slots at a time, and
// returns the first slot's failure.
func (c *Client) markSlotsReady(ctx context.Context, mark *request) error {
	const parallel = 32
	errs := make(chan error, slotCount)
	slots := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for slot := range slots {
				marker, process := slotMarkerKeys(slot)
				m := *mark
				m.keys = []string{marker, process}
				errs <- c.markReady(ctx, &m)
			}
		}()
	}
	for slot := 0; slot < slotCount && ctx.Err() == nil; slot++ {
		slots <- slot
	}
	close(slots)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

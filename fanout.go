package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
)

// fanout asks every node by req at once (nodes.Set.Fanout): a reply is
// OutcomeOK when isOK says so, and the answers are collected until
// enough(ok, others) is true, every node answered, or timeout passed.
func (c *Client) fanout(ctx context.Context, timeout time.Duration, req *nodes.Request, isOK func(any) bool, enough func(ok, others int) bool) ([]NodeResult, int) {
	rs, ok := c.nodes.Fanout(ctx, timeout, req, isOK, enough)
	return nodeResults(rs), ok
}

// trackedFanout is fanout that also returns, when some nodes were not
// heard out, the fan-out whose requests to them are still to end; lag
// holds req back on the nodes whose earlier request has not ended.
func (c *Client) trackedFanout(ctx context.Context, timeout time.Duration, req *nodes.Request, lag *nodes.Lagging, isOK func(any) bool, enough func(ok, others int) bool) ([]NodeResult, int, *nodes.Flight) {
	rs, ok, unfinished := c.nodes.TrackedFanout(ctx, timeout, req, lag, isOK, enough)
	return nodeResults(rs), ok, unfinished
}

// nodeResults returns rs as NodeResults.
func nodeResults(rs []nodes.Result) []NodeResult {
	results := make([]NodeResult, len(rs))
	for i, r := range rs {
		results[i] = nodeResult(r)
	}
	return results
}

// nodeResult returns r as a NodeResult: the outcomes share their values.
func nodeResult(r nodes.Result) NodeResult {
	return NodeResult{Node: r.Node, Outcome: Outcome(r.Outcome), Err: r.Err, Latency: r.Latency}
}

// nodeConns returns conns as the nodes package takes them.
func nodeConns(conns []Conn) []nodes.Conn {
	nc := make([]nodes.Conn, len(conns))
	for i, conn := range conns {
		nc[i] = conn
	}
	return nc
}

// unasked returns a result per node for a request that was never sent.
func (c *Client) unasked() []NodeResult {
	results := make([]NodeResult, len(c.conns))
	for i, conn := range c.conns {
		results[i].Node, results[i].Outcome = conn.Name(), OutcomeNotAsked
	}
	return results
}

package redlock

import (
	"slices"

	"github.com/redlock-go/redlock/internal/dialreport"
	"github.com/redlock-go/redlock/internal/nodes"
)

func init() { dialreport.Attach = attachUnreachable }

// attachUnreachable records on client, a *Client, the nodes its Dial could
// not reach (see UnreachableAtDial).
func attachUnreachable(client any, down []dialreport.Down) {
	c := client.(*Client)
	c.unreachable = make([]NodeResult, len(down))
	for i, d := range down {
		outcome := OutcomeError
		if nodes.IsTimeout(d.Err) {
			outcome = OutcomeTimeout
		}
		c.unreachable[i] = NodeResult{Node: c.conns[d.Node].Name(), Outcome: outcome, Err: d.Err, Latency: d.Latency}
	}
}

// UnreachableAtDial returns the nodes that goredis.Dial or rueidis.Dial
// could not reach when it made the Client, each with the error of its
// PING, in client order; nil when every node answered, and for a Client
// from New, which does no I/O. Dial tolerates such nodes, as Redlock works
// while a majority answers, and each call tries them again. The list does
// not change afterwards: how a node fares since shows in each call's
// outcomes (Lock.Nodes, QuorumError) and in Inspect.
func (c *Client) UnreachableAtDial() []NodeResult { return slices.Clone(c.unreachable) }

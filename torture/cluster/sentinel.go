package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// replicationUser is the user a replica authenticates as with its master
// in a cluster with a Sentinel. Disabling it on the master cuts the
// replication link (cutUser): a Sentinel sees a replica that follows
// another address than the master's as misconfigured and points it at
// the master itself, so a proxy in between could not stay.
const (
	replicationUser     = "replication"
	replicationPassword = "replication-pw"
)

// sentinelReplicaConfig is what every node of a cluster with a Sentinel
// has in its redis.conf: the replication user, and the credentials a
// replica gives its master, so that any process can be either.
var sentinelReplicaConfig = []string{
	"user " + replicationUser + " on >" + replicationPassword + " ~* &* +@all",
	"masteruser " + replicationUser,
	"masterauth " + replicationPassword,
}

// sentinelDownAfter is how long the Sentinel waits for a master's answer
// before it fails the master over; the promotion follows about half a
// second later. Shorter fails over sooner after a kill, and a scenario's
// holders must keep the lock longer than the failover takes for it to
// matter. But it also bounds the cuts of the replication link: the
// Sentinel does not promote a replica whose link was down for ten times
// this before its master went down, and a cut lasts a TTL and then up to
// a hold until the grant the failover follows. 1 s leaves room for both.
const sentinelDownAfter = time.Second

// sentinelKnowsWait bounds the wait for the Sentinel to find a replica.
const (
	sentinelKnowsWait = 10 * time.Second
	sentinelKnowsPoll = 20 * time.Millisecond
)

// errSentinelPromotes is returned by Promote on a pair that a Sentinel
// watches: the Sentinel promotes its replica (see AwaitFailover).
var errSentinelPromotes = errors.New("cluster: a Sentinel promotes this node's replica")

// MasterName returns the name under which a Sentinel watches node n:
// "n<n>".
func MasterName(n int) string { return fmt.Sprintf("n%d", n) }

// newSentinelPair pairs master with replica, which must be running and
// empty, and makes replica copy master directly; startSentinel then sets
// the Sentinel that watches them.
func newSentinelPair(ctx context.Context, node int, master, replica *redlocktest.Node, links []*Link) (*Pair, error) {
	p := &Pair{node: node, procs: [2]*redlocktest.Node{master, replica}, links: links}
	if err := p.follow(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// startSentinel starts one redis-sentinel process that watches the pairs
// of nodes, each as master MasterName(n), and waits until it knows each
// replica.
func (c *Cluster) startSentinel(ctx context.Context, nodes []int) error {
	masters := map[string]int{}
	for _, n := range nodes {
		masters[MasterName(n)] = c.pairs[n].Master().Port()
	}
	var err error
	c.sentinel, err = redlocktest.NewSentinel(ctx, redlocktest.SentinelOptions{Masters: masters, DownAfter: sentinelDownAfter})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for _, n := range nodes {
		c.pairs[n].sentinel = c.sentinel
		if err := c.pairs[n].waitSentinelKnows(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitSentinelKnows waits until the Sentinel lists the pair's replica.
func (p *Pair) waitSentinelKnows(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, sentinelKnowsWait)
	defer cancel()
	addr := p.Replica().Addr()
	for {
		reply, err := p.sentinel.Do(ctx, "SENTINEL", "REPLICAS", MasterName(p.node))
		if err == nil && strings.Contains(reply, addr) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: node %d: the Sentinel does not list its replica %s (%v): %w", p.node, addr, err, ctx.Err())
		case <-time.After(sentinelKnowsPoll):
		}
	}
}

// Sentinel reports whether a Sentinel watches the pair.
func (p *Pair) Sentinel() bool { return p.sentinel != nil }

// AwaitFailover waits until the Sentinel watching the pair gives its
// replica as the master, as it does some time after the master died, and
// then swaps the pair's roles as Promote does. It gives up when ctx ends
// or after 20 s.
func (p *Pair) AwaitFailover(ctx context.Context) error {
	if p.sentinel == nil {
		return fmt.Errorf("cluster: node %d: no Sentinel watches it", p.node)
	}
	if err := p.sentinel.WaitMaster(ctx, MasterName(p.node), p.Replica().Addr()); err != nil {
		return fmt.Errorf("cluster: node %d: %w", p.node, err)
	}
	return p.swap()
}

// cutUser disables the replication user on master and closes its
// replicas' connections: they keep trying to reconnect and are refused.
func cutUser(ctx context.Context, node int, master *redlocktest.Node) error {
	if _, err := master.Do(ctx, "ACL", "SETUSER", replicationUser, "off"); err != nil {
		return fmt.Errorf("cluster: node %d: cut replication: %w", node, err)
	}
	if _, err := master.Do(ctx, "CLIENT", "KILL", "USER", replicationUser); err != nil {
		return fmt.Errorf("cluster: node %d: cut replication: %w", node, err)
	}
	return nil
}

// healUser enables the replication user on master again, unless master
// has stopped meanwhile: a restarted process has it enabled from its
// redis.conf.
func healUser(ctx context.Context, node int, master *redlocktest.Node) error {
	if master == nil || !master.Running() {
		return nil
	}
	if _, err := master.Do(ctx, "ACL", "SETUSER", replicationUser, "on"); err != nil && master.Running() {
		return fmt.Errorf("cluster: node %d: heal replication: %w", node, err)
	}
	return nil
}

// sentinelURL returns the URL through which workers reach node n, when a
// Sentinel watches it, and whether one does.
func (c *Cluster) sentinelURL(n int) (string, bool) {
	if c.pairs == nil || c.pairs[n].sentinel == nil {
		return "", false
	}
	return c.sentinel.URL(MasterName(n)), true
}

// checkSentinel checks that opts asks for a Sentinel only on existing
// nodes with replicas.
func checkSentinel(opts Options, nodes int) error {
	if len(opts.Sentinel) == 0 {
		return nil
	}
	if !opts.Replicas || opts.RedisCluster {
		return errors.New("cluster: Options.Sentinel needs Options.Replicas, and no Redis Cluster")
	}
	if slices.ContainsFunc(opts.Sentinel, func(n int) bool { return n < 0 || n >= nodes }) {
		return fmt.Errorf("cluster: Options.Sentinel %v: a node out of range", opts.Sentinel)
	}
	return nil
}

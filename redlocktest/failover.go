package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// errNotRedisCluster is returned by the Redis Cluster helpers of a Cluster
// of independent servers.
var errNotRedisCluster = errors.New("redlocktest: not a Redis Cluster (see Options.RedisCluster)")

// MasterOf returns the master that serves slot now, as the running nodes of
// the Redis Cluster see it (a paused node is not asked). It fails if they
// do not all agree, if none answers, or if the master they name is seen as
// failing. After a failover it names the promoted replica; NodeForSlot
// names the master given slot when the cluster formed.
func (c *Cluster) MasterOf(ctx context.Context, slot int) (*Node, error) {
	if c.masters == 0 {
		return nil, errNotRedisCluster
	}
	var master *Node
	asked := 0
	for _, n := range c.nodes {
		if !answering(n) {
			continue
		}
		view, err := n.view(ctx)
		if err != nil {
			return nil, err
		}
		m, err := c.masterIn(view, slot)
		if err != nil {
			return nil, fmt.Errorf("redlocktest: node %d: %w", n.index, err)
		}
		if master != nil && m != master {
			return nil, fmt.Errorf("redlocktest: slot %d: nodes disagree on its master: node %d and node %d", slot, master.index, m.index)
		}
		master, asked = m, asked+1
	}
	if asked == 0 {
		return nil, fmt.Errorf("redlocktest: MasterOf(%d): %w", slot, ErrNotRunning)
	}
	return master, nil
}

// masterIn returns the node that serves slot in one node's view.
func (c *Cluster) masterIn(view []clusterNode, slot int) (*Node, error) {
	cn, ok := servedBy(view, slot)
	if !ok {
		return nil, fmt.Errorf("no master serves slot %d", slot)
	}
	if slices.ContainsFunc(cn.flags, badFlag) {
		return nil, fmt.Errorf("slot %d: its master %s is seen as %v", slot, cn.addr, cn.flags)
	}
	n := c.nodeAt(cn.addr)
	if n == nil {
		return nil, fmt.Errorf("slot %d is served by %s, which is not in the cluster", slot, cn.addr)
	}
	return n, nil
}

// answering reports whether the node runs and is not paused, so that a
// command sent to it gets an answer.
func answering(n *Node) bool {
	return n.Running() && !n.Paused()
}

// view returns the node's CLUSTER NODES, within clusterProbeTimeout.
func (n *Node) view(ctx context.Context) ([]clusterNode, error) {
	ctx, cancel := context.WithTimeout(ctx, clusterProbeTimeout)
	defer cancel()
	reply, err := n.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("redlocktest: node %d: %w", n.index, err)
	}
	view, err := parseClusterNodes(reply)
	if err != nil {
		return nil, fmt.Errorf("redlocktest: node %d: %w", n.index, err)
	}
	return view, nil
}

// ReplicasOf returns the nodes that replicate master now, in index order,
// as the first running node (not paused) sees it: master itself if it
// runs. A master that died is still the master of its replicas until one
// of them is promoted.
func (c *Cluster) ReplicasOf(ctx context.Context, master *Node) ([]*Node, error) {
	if c.masters == 0 {
		return nil, errNotRedisCluster
	}
	asker := master
	if !answering(master) {
		i := slices.IndexFunc(c.nodes, answering)
		if i < 0 {
			return nil, fmt.Errorf("redlocktest: ReplicasOf: %w", ErrNotRunning)
		}
		asker = c.nodes[i]
	}
	view, err := asker.view(ctx)
	if err != nil {
		return nil, err
	}
	var replicas []*Node
	for _, n := range c.nodes {
		i := slices.IndexFunc(view, func(cn clusterNode) bool { return cn.id == n.id })
		if i >= 0 && !view[i].isMaster() && view[i].master == master.id {
			replicas = append(replicas, n)
		}
	}
	return replicas, nil
}

// WaitPromoted waits until a replica has taken over slot from former, its
// master, which was killed, paused or failed over: until every running
// node (not paused) reports cluster_state:ok and sees one master other
// than former serve slot, not failing. It returns that master. With the
// cluster's cluster-node-timeout of 1s, a replica is promoted about 2 to
// 3 seconds after its master is killed. It gives up after 15 seconds or
// when ctx is done, with an error that tells what was still wrong.
func (c *Cluster) WaitPromoted(ctx context.Context, slot int, former *Node) (*Node, error) {
	if c.masters == 0 {
		return nil, errNotRedisCluster
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	tick := time.NewTicker(clusterPoll)
	defer tick.Stop()
	for {
		master, err := c.promoted(ctx, slot, former)
		if err == nil {
			return master, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("redlocktest: slot %d: no replica promoted in place of node %d: %w: %w", slot, former.index, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// promoted checks once whether every running node agrees that a master
// other than former serves slot, with the cluster in state ok.
func (c *Cluster) promoted(ctx context.Context, slot int, former *Node) (*Node, error) {
	for _, n := range c.nodes {
		if !answering(n) {
			continue
		}
		probe, cancel := context.WithTimeout(ctx, clusterProbeTimeout)
		_, err := n.clusterView(probe) // cluster_state:ok
		cancel()
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", n.index, err)
		}
	}
	master, err := c.MasterOf(ctx, slot)
	if err != nil {
		return nil, err
	}
	if master == former {
		return nil, fmt.Errorf("node %d still serves slot %d", former.index, slot)
	}
	return master, nil
}

// Failover makes replica take over its master's slots with CLUSTER
// FAILOVER, the coordinated manual failover: the master stops taking
// writes, the replica catches up with its replication stream, is promoted,
// and the former master becomes its replica. It waits first for the
// replica to be in sync with its master (one just restarted copies its
// data first), and sends the failover again when Redis let one time out
// (after five seconds: a busy machine), for up to 30 seconds in all.
// Failover returns once every running node sees replica serve those slots
// (as WaitPromoted does), or an error. For a failover without the
// master's help, send CLUSTER FAILOVER FORCE or TAKEOVER with Node.Do and
// call WaitPromoted.
func (c *Cluster) Failover(ctx context.Context, replica *Node) error {
	if c.masters == 0 {
		return errNotRedisCluster
	}
	former, slot, err := c.masterOfReplica(ctx, replica)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*clusterTimeout)
	defer cancel()
	for {
		promoted, err := c.failoverOnce(ctx, replica, slot, former)
		if err == nil && promoted != replica {
			return fmt.Errorf("redlocktest: node %d's slots went to node %d, not to node %d", former.index, promoted.index, replica.index)
		}
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
}

// manualFailoverWait is how long Failover waits for one CLUSTER FAILOVER
// to take effect: Redis gives up a manual failover after five seconds.
const manualFailoverWait = 6 * time.Second

// failoverOnce sends replica one CLUSTER FAILOVER, unless it was promoted
// already, and waits up to manualFailoverWait for a node other than former
// to serve slot.
func (c *Cluster) failoverOnce(ctx context.Context, replica *Node, slot int, former *Node) (*Node, error) {
	if _, _, err := c.masterOfReplica(ctx, replica); err == nil {
		if err := waitInSync(ctx, replica); err != nil {
			return nil, err
		}
		if _, err := replica.Do(ctx, "CLUSTER", "FAILOVER"); err != nil {
			return nil, fmt.Errorf("redlocktest: node %d: CLUSTER FAILOVER: %w", replica.index, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, manualFailoverWait)
	defer cancel()
	return c.WaitPromoted(ctx, slot, former)
}

// waitInSync waits, up to 15 seconds or until ctx is done, for replica's
// link to its master to be up with no sync under way: a replica just
// restarted copies its master's data first, and a CLUSTER FAILOVER sent
// meanwhile is accepted, then times out on its own five seconds later.
func waitInSync(ctx context.Context, replica *Node) error {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	tick := time.NewTicker(clusterPoll)
	defer tick.Stop()
	for {
		err := inSync(ctx, replica)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redlocktest: node %d never in sync with its master: %w: %w", replica.index, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// inSync checks once that replica's link to its master is up, with no
// sync under way.
func inSync(ctx context.Context, replica *Node) error {
	info, err := replica.Do(ctx, "INFO", "replication")
	if err != nil {
		return err
	}
	if link := infoField(info, "master_link_status"); link != "up" {
		return fmt.Errorf("master_link_status:%s", link)
	}
	if syncing := infoField(info, "master_sync_in_progress"); syncing != "0" {
		return fmt.Errorf("master_sync_in_progress:%s", syncing)
	}
	return nil
}

// masterOfReplica returns the master replica replicates, by replica's own
// view, and one slot it serves.
func (c *Cluster) masterOfReplica(ctx context.Context, replica *Node) (*Node, int, error) {
	view, err := replica.view(ctx)
	if err != nil {
		return nil, 0, err
	}
	me := slices.IndexFunc(view, clusterNode.isMyself)
	if me < 0 || view[me].isMaster() {
		return nil, 0, fmt.Errorf("redlocktest: node %d is not a replica", replica.index)
	}
	m := slices.IndexFunc(view, func(cn clusterNode) bool { return cn.id == view[me].master })
	if m < 0 || len(view[m].slots) == 0 {
		return nil, 0, fmt.Errorf("redlocktest: node %d replicates %s, which serves no slots", replica.index, view[me].master)
	}
	master := c.nodeAt(view[m].addr)
	if master == nil {
		return nil, 0, fmt.Errorf("redlocktest: node %d replicates %s, which is not in the cluster", replica.index, view[m].addr)
	}
	return master, view[m].slots[0].First, nil
}

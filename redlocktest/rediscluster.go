package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	defaultClusterNodes = 3                      // Options.Nodes 0 with RedisCluster
	clusterNodeTimeout  = 1000                   // cluster-node-timeout, in ms
	clusterTimeout      = 15 * time.Second       // how long forming or WaitRedisCluster may take
	clusterPoll         = 20 * time.Millisecond  // state check interval while waiting
	clusterProbeTimeout = 500 * time.Millisecond // one node's state check
)

// clusterConfig returns the redis.conf lines of a Redis Cluster node whose
// cluster bus listens on busPort. The cluster state file lives in the
// node's directory, which Restart keeps, so a restarted node rejoins with
// its slots.
func clusterConfig(busPort int) []string {
	return []string{
		"cluster-enabled yes",
		"cluster-config-file " + nodesConfName,
		"cluster-node-timeout " + strconv.Itoa(clusterNodeTimeout),
		"cluster-port " + strconv.Itoa(busPort),
	}
}

// Slots returns the hash slots the node was given when its Redis Cluster
// formed, or nil outside a Redis Cluster. Slots moved later (with CLUSTER
// SETSLOT, say) are not tracked.
func (n *Node) Slots() []SlotRange {
	return slices.Clone(n.slots)
}

// NodeForSlot returns the node given slot when the Redis Cluster formed,
// or nil if there is none (the cluster is not a Redis Cluster, or slot is
// out of range).
func (c *Cluster) NodeForSlot(slot int) *Node {
	for _, n := range c.nodes {
		for _, r := range n.slots {
			if r.Contains(slot) {
				return n
			}
		}
	}
	return nil
}

// NodeForKey returns the node that serves key's hash slot (see KeySlot and
// NodeForSlot), or nil outside a Redis Cluster.
func (c *Cluster) NodeForKey(key string) *Node {
	return c.NodeForSlot(KeySlot(key))
}

// formRedisCluster turns the started nodes into one Redis Cluster, as
// redis-cli --cluster create does: each node takes its share of the slots
// and a config epoch of its own, node 0 meets the others, and the gossip
// does the rest.
func (c *Cluster) formRedisCluster(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	for i, r := range splitSlots(len(c.nodes)) {
		n := c.nodes[i]
		n.slots = []SlotRange{r}
		if err := n.claimSlots(ctx, r, i+1); err != nil {
			return err
		}
	}
	for _, n := range c.nodes[1:] {
		if _, err := c.nodes[0].Do(ctx, "CLUSTER", "MEET", host, strconv.Itoa(n.port), strconv.Itoa(n.busPort)); err != nil {
			return fmt.Errorf("redlocktest: node 0 meets node %d: %w", n.index, err)
		}
	}
	return c.waitRedisCluster(ctx)
}

// claimSlots assigns r to the node and sets its config epoch, which must
// happen before it knows any other node. A node that loaded keys from an
// earlier run already took their slots, so only the others are added.
func (n *Node) claimSlots(ctx context.Context, r SlotRange, epoch int) error {
	own, err := n.ownSlots(ctx)
	if err != nil {
		return err
	}
	if args := addSlotsArgs(r, own); len(args) > 2 {
		if _, err := n.Do(ctx, args...); err != nil {
			return fmt.Errorf("redlocktest: node %d: %w", n.index, err)
		}
	}
	if _, err := n.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(epoch)); err != nil {
		return fmt.Errorf("redlocktest: node %d: %w", n.index, err)
	}
	return nil
}

// ownSlots returns the slots the node serves, by its own CLUSTER NODES.
func (n *Node) ownSlots(ctx context.Context) ([]SlotRange, error) {
	reply, err := n.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("redlocktest: node %d: %w", n.index, err)
	}
	view, err := parseClusterNodes(reply)
	if err != nil {
		return nil, fmt.Errorf("redlocktest: node %d: %w", n.index, err)
	}
	for _, cn := range view {
		if slices.Contains(cn.flags, "myself") {
			return cn.slots, nil
		}
	}
	return nil, nil
}

// addSlotsArgs returns CLUSTER ADDSLOTSRANGE with the parts of r not in
// own, which is sorted.
func addSlotsArgs(r SlotRange, own []SlotRange) []string {
	args := []string{"CLUSTER", "ADDSLOTSRANGE"}
	next := r.First
	for _, o := range own {
		if o.Last < next || o.First > r.Last {
			continue
		}
		if o.First > next {
			args = append(args, strconv.Itoa(next), strconv.Itoa(o.First-1))
		}
		next = o.Last + 1
	}
	if next <= r.Last {
		args = append(args, strconv.Itoa(next), strconv.Itoa(r.Last))
	}
	return args
}

// WaitRedisCluster waits until every node of a Redis Cluster is running,
// reports cluster_state:ok and knows every other node, none of them
// failing, with the slots each was given when the cluster formed. Use it
// after restarting or resuming a node: Start, Restart and Resume wait only
// for the node's own process. It gives up after 15 seconds or when ctx is
// done, with an error that tells what was still wrong.
func (c *Cluster) WaitRedisCluster(ctx context.Context) error {
	if len(c.nodes) == 0 || c.nodes[0].busPort == 0 {
		return errors.New("redlocktest: WaitRedisCluster: not a Redis Cluster (see Options.RedisCluster)")
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	return c.waitRedisCluster(ctx)
}

// waitRedisCluster polls the nodes until they agree or ctx is done.
func (c *Cluster) waitRedisCluster(ctx context.Context) error {
	tick := time.NewTicker(clusterPoll)
	defer tick.Stop()
	// last is from the last check that ctx did not cut short. A dial can
	// time out on ctx's deadline before ctx.Err is set, so the clock tells.
	var last error
	deadline, _ := ctx.Deadline()
	for {
		problem := c.clusterProblem(ctx)
		if problem == nil {
			return nil
		}
		if (ctx.Err() == nil && time.Now().Before(deadline)) || last == nil {
			last = problem
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redlocktest: Redis Cluster not ready: %w:\n%w", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// clusterProblem checks every node once and returns what is not as
// WaitRedisCluster wants it, node by node, or nil.
func (c *Cluster) clusterProblem(ctx context.Context) error {
	want := make(map[string][]SlotRange, len(c.nodes))
	for _, n := range c.nodes {
		want[n.Addr()] = n.slots
	}
	var errs []error
	for _, n := range c.nodes {
		if err := n.clusterProblem(ctx, want); err != nil {
			errs = append(errs, fmt.Errorf("node %d (%s): %w", n.index, n.Addr(), err))
		}
	}
	return errors.Join(errs...)
}

// clusterProblem checks the node's view of the cluster against want, the
// slots of every node by address.
func (n *Node) clusterProblem(ctx context.Context, want map[string][]SlotRange) error {
	ctx, cancel := context.WithTimeout(ctx, clusterProbeTimeout)
	defer cancel()
	info, err := n.Do(ctx, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if state := infoField(info, "cluster_state"); state != "ok" {
		return fmt.Errorf("cluster_state:%s", state)
	}
	reply, err := n.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	view, err := parseClusterNodes(reply)
	if err != nil {
		return err
	}
	return viewProblem(view, want)
}

// viewProblem compares one node's CLUSTER NODES with want.
func viewProblem(view []clusterNode, want map[string][]SlotRange) error {
	if len(view) != len(want) {
		return fmt.Errorf("knows %d nodes, want %d", len(view), len(want))
	}
	for _, cn := range view {
		slots, known := want[cn.addr]
		switch {
		case !known:
			return fmt.Errorf("knows node %s, which is not in the cluster", cn.addr)
		case slices.ContainsFunc(cn.flags, badFlag):
			return fmt.Errorf("sees node %s as %s", cn.addr, strings.Join(cn.flags, ","))
		case !slices.Equal(cn.slots, slots):
			return fmt.Errorf("sees node %s serve slots %v, want %v", cn.addr, cn.slots, slots)
		}
	}
	return nil
}

// badFlag reports whether a CLUSTER NODES flag means the node is not a
// healthy member yet, or any more.
func badFlag(flag string) bool {
	switch flag {
	case "fail", "fail?", "handshake", "noaddr":
		return true
	}
	return false
}

// infoField returns the value of field in an INFO-style reply, or "".
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

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
	defaultClusterNodes = 3 // Options.Nodes 0 with RedisCluster
	// clusterNodeTimeout is cluster-node-timeout, in ms: how long a node
	// may not answer before the others suspect it. A replica is promoted
	// about 2-3 timeouts after its master dies, and a cluster without a
	// replica for a dead master reports cluster_state:fail after about
	// 1.5. Lower makes failover tests faster, but a node slowed down by a
	// loaded machine (two cores running -race tests) is then taken for
	// dead and failed over without reason; 1 s keeps both in check.
	clusterNodeTimeout = 1000
	// replSyncDelay is repl-diskless-sync-delay, in seconds: how long a
	// master waits for more replicas before it streams a full copy of its
	// data. Redis's 5 s lets replicas that connect together share a copy,
	// which matters for big data sets; a test's are tiny, so a replica
	// syncs at once.
	replSyncDelay       = 0
	clusterTimeout      = 15 * time.Second       // how long forming or a wait for the cluster may take
	clusterPoll         = 20 * time.Millisecond  // state check interval while waiting
	clusterProbeTimeout = 500 * time.Millisecond // one node's state check
)

// clusterConfig returns the redis.conf lines of a Redis Cluster node of
// release v whose cluster bus listens on busPort (which must be its port
// + busOffset before 7.0: those releases have no cluster-port). The
// cluster state file lives in the node's directory, which Restart keeps,
// so a restarted node rejoins with its slots.
func clusterConfig(v Version, busPort int) []string {
	lines := []string{
		"cluster-enabled yes",
		"cluster-config-file " + nodesConfName,
		"cluster-node-timeout " + strconv.Itoa(clusterNodeTimeout),
		"repl-diskless-sync-delay " + strconv.Itoa(replSyncDelay),
	}
	if v.clusterPortSetting() {
		lines = append(lines, "cluster-port "+strconv.Itoa(busPort))
	}
	return lines
}

// ID returns the node's Redis Cluster node ID (what CLUSTER MYID says),
// which it keeps across restarts, or "" outside a Redis Cluster.
func (n *Node) ID() string { return n.id }

// Slots returns the hash slots the node was given when its Redis Cluster
// formed, or nil outside a Redis Cluster and for a replica. Slots moved
// later (with CLUSTER SETSLOT, or by a failover) are not tracked: see
// Cluster.MasterOf.
func (n *Node) Slots() []SlotRange {
	return slices.Clone(n.slots)
}

// NodeForSlot returns the master given slot when the Redis Cluster formed,
// or nil if there is none (the cluster is not a Redis Cluster, or slot is
// out of range). After a failover, Cluster.MasterOf tells who serves it.
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

// NodeForKey returns the master that was given key's hash slot (see
// KeySlot and NodeForSlot), or nil outside a Redis Cluster.
func (c *Cluster) NodeForKey(key string) *Node {
	return c.NodeForSlot(KeySlot(key))
}

// formRedisCluster turns the started nodes into one Redis Cluster, as
// redis-cli --cluster create does: each master takes its share of the
// slots, every node takes a config epoch of its own, node 0 meets the
// others, the gossip does the rest, and each replica then replicates its
// master.
func (c *Cluster) formRedisCluster(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	slots := splitSlots(c.masters)
	for i, n := range c.nodes {
		var err error
		n.shard = c.shardOf(i)
		if n.id, err = n.Do(ctx, "CLUSTER", "MYID"); err != nil {
			return fmt.Errorf("redlocktest: node %d: %w", i, err)
		}
		if i < c.masters {
			n.slots = []SlotRange{slots[i]}
			err = n.claimSlots(ctx, slots[i], i+1)
		} else {
			err = n.prepareReplica(ctx, i+1)
		}
		if err != nil {
			return err
		}
	}
	for _, n := range c.nodes[1:] {
		if _, err := c.nodes[0].Do(ctx, "CLUSTER", "MEET", host, strconv.Itoa(n.port), strconv.Itoa(n.busPort)); err != nil {
			return fmt.Errorf("redlocktest: node 0 meets node %d: %w", n.index, err)
		}
	}
	for _, n := range c.nodes[c.masters:] {
		if err := n.replicate(ctx, c.nodes[n.shard]); err != nil {
			return err
		}
	}
	return c.waitRedisCluster(ctx)
}

// shardOf returns the index of the master that node i is, or replicates
// when the cluster forms.
func (c *Cluster) shardOf(i int) int {
	if i < c.masters {
		return i
	}
	return (i - c.masters) / ((len(c.nodes) - c.masters) / c.masters)
}

// prepareReplica empties a node that is to be a replica (keys loaded from
// an earlier run took their slots, and a replica may have neither) and
// sets its config epoch, before it knows any other node.
func (n *Node) prepareReplica(ctx context.Context, epoch int) error {
	for _, args := range [][]string{{"FLUSHALL"}, {"CLUSTER", "FLUSHSLOTS"}, {"CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(epoch)}} {
		if _, err := n.Do(ctx, args...); err != nil {
			return fmt.Errorf("redlocktest: node %d: %w", n.index, err)
		}
	}
	return nil
}

// replicate makes the node a replica of master with CLUSTER REPLICATE,
// retrying while the node does not know the master yet (the gossip after
// CLUSTER MEET takes a moment).
func (n *Node) replicate(ctx context.Context, master *Node) error {
	tick := time.NewTicker(clusterPoll)
	defer tick.Stop()
	for {
		_, err := n.Do(ctx, "CLUSTER", "REPLICATE", master.id)
		var serverErr ServerError
		if err == nil || !errors.As(err, &serverErr) || !strings.Contains(string(serverErr), "Unknown node") {
			if err != nil {
				return fmt.Errorf("redlocktest: node %d replicates node %d: %w", n.index, master.index, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redlocktest: node %d never learned of node %d: %w", n.index, master.index, ctx.Err())
		case <-tick.C:
		}
	}
}

// claimSlots assigns r to the node and sets its config epoch, which must
// happen before it knows any other node. A node that loaded keys from an
// earlier run already took their slots, so only the others are added.
func (n *Node) claimSlots(ctx context.Context, r SlotRange, epoch int) error {
	own, err := n.ownSlots(ctx)
	if err != nil {
		return err
	}
	if args := addSlotsArgs(r, own, n.conf.version.addSlotsRange()); len(args) > 2 {
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

// addSlotsArgs returns the command that adds the parts of r not in own,
// which is sorted: CLUSTER ADDSLOTSRANGE with their bounds, or, on a
// release without it (ranges false), CLUSTER ADDSLOTS with each slot.
func addSlotsArgs(r SlotRange, own []SlotRange, ranges bool) []string {
	args := []string{"CLUSTER", "ADDSLOTSRANGE"}
	if !ranges {
		args[1] = "ADDSLOTS"
	}
	add := func(first, last int) {
		if ranges {
			args = append(args, strconv.Itoa(first), strconv.Itoa(last))
			return
		}
		for slot := first; slot <= last; slot++ {
			args = append(args, strconv.Itoa(slot))
		}
	}
	next := r.First
	for _, o := range own {
		if o.Last < next || o.First > r.Last {
			continue
		}
		if o.First > next {
			add(next, o.First-1)
		}
		next = o.Last + 1
	}
	if next <= r.Last {
		add(next, r.Last)
	}
	return args
}

// WaitRedisCluster waits until every node of a Redis Cluster is running,
// reports cluster_state:ok and knows every other node, none of them
// failing; every master the cluster formed with, or one of its replicas
// promoted in its place, serves the slots it was given; every other node
// of that group replicates it, and every replica's link to its master is
// up. Use it after restarting or resuming a node: Start, Restart and
// Resume wait only for the node's own process. It gives up after 15
// seconds or when ctx is done, with an error that tells what was still
// wrong.
func (c *Cluster) WaitRedisCluster(ctx context.Context) error {
	if c.masters == 0 {
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
	var errs []error
	for _, n := range c.nodes {
		if err := c.nodeProblem(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("node %d (%s): %w", n.index, n.Addr(), err))
		}
	}
	return errors.Join(errs...)
}

// nodeProblem checks one node's view of the cluster, and its link to its
// master if it is a replica.
func (c *Cluster) nodeProblem(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, clusterProbeTimeout)
	defer cancel()
	view, err := n.clusterView(ctx)
	if err != nil {
		return err
	}
	if err := c.viewProblem(view); err != nil {
		return err
	}
	if i := slices.IndexFunc(view, clusterNode.isMyself); i < 0 || view[i].isMaster() {
		return nil
	}
	info, err := n.Do(ctx, "INFO", "replication")
	if err != nil {
		return err
	}
	if link := infoField(info, "master_link_status"); link != "up" {
		return fmt.Errorf("master_link_status:%s", link)
	}
	return nil
}

// clusterView returns the node's CLUSTER NODES, once it reports
// cluster_state:ok.
func (n *Node) clusterView(ctx context.Context) ([]clusterNode, error) {
	info, err := n.Do(ctx, "CLUSTER", "INFO")
	if err != nil {
		return nil, err
	}
	if state := infoField(info, "cluster_state"); state != "ok" {
		return nil, fmt.Errorf("cluster_state:%s", state)
	}
	reply, err := n.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	return parseClusterNodes(reply)
}

// viewProblem compares one node's CLUSTER NODES with the cluster as it
// formed: the same nodes, none failing, one master per group (the master
// the cluster formed with and its replicas) serving the group's slots, and
// the rest of the group replicating it.
func (c *Cluster) viewProblem(view []clusterNode) error {
	if len(view) != len(c.nodes) {
		return fmt.Errorf("knows %d nodes, want %d", len(view), len(c.nodes))
	}
	masters := make(map[int]clusterNode, c.masters) // by group
	for _, cn := range view {
		n := c.nodeAt(cn.addr)
		switch {
		case n == nil:
			return fmt.Errorf("knows node %s, which is not in the cluster", cn.addr)
		case slices.ContainsFunc(cn.flags, badFlag):
			return fmt.Errorf("sees node %s as %s", cn.addr, strings.Join(cn.flags, ","))
		case !cn.isMaster():
			continue
		}
		if other, dup := masters[n.shard]; dup {
			return fmt.Errorf("sees nodes %s and %s both as masters of node %d's slots", other.addr, cn.addr, n.shard)
		}
		masters[n.shard] = cn
		if want := c.nodes[n.shard].slots; !slices.Equal(cn.slots, want) {
			return fmt.Errorf("sees node %s serve slots %v, want %v", cn.addr, cn.slots, want)
		}
	}
	return c.replicasProblem(view, masters)
}

// replicasProblem checks that each replica in view replicates the master
// of its group.
func (c *Cluster) replicasProblem(view []clusterNode, masters map[int]clusterNode) error {
	for _, cn := range view {
		if cn.isMaster() {
			continue
		}
		n := c.nodeAt(cn.addr)
		if m, ok := masters[n.shard]; !ok || cn.master != m.id {
			return fmt.Errorf("sees node %s replicate %s, want the master of node %d's slots", cn.addr, cn.master, n.shard)
		}
	}
	return nil
}

// nodeAt returns the node listening on addr, or nil.
func (c *Cluster) nodeAt(addr string) *Node {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			return n
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

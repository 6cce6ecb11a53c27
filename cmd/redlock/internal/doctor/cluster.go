package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// Shard is what an audit learned about one master of a Redis Cluster node
// and the slots it serves.
type Shard struct {
	// Master is the audit of the master, as of a standalone node; its Node
	// is the master's address. Its quarantine fields are unset: over a
	// Redis Cluster the quarantine works per slot (see Markers).
	Master Node
	// ID is the master's cluster node ID.
	ID string
	// Slots are the hash slots the master serves, in order.
	Slots []SlotRange
	// ClusterState is cluster_state from the master's CLUSTER INFO: "ok",
	// or "fail" when it refuses commands on its keys; "" when unknown.
	ClusterState string
	// Markers sorts the master's slots by the state of their restart
	// markers; zero when the quarantine is off or the master did not
	// answer.
	Markers Markers
}

// Name names the shard by its master's address and slots, such as
// "127.0.0.1:7000 slots 0-5460".
func (s Shard) Name() string {
	return s.Master.Node + " slots " + rangesText(s.Slots)
}

// clusterClient returns the go-redis cluster client under conn, or nil
// when conn is not a goredis Conn over a Redis Cluster: only a go-redis
// cluster client reaches each master on its own, with the credentials and
// TLS settings of the node URL.
func clusterClient(conn redlock.Conn) *redis.ClusterClient {
	c, ok := conn.(interface{ Client() redis.UniversalClient })
	if !ok {
		return nil
	}
	cc, _ := c.Client().(*redis.ClusterClient)
	return cc
}

// inspect audits one node: a Redis Cluster master by master when conn
// reaches each of them (see clusterClient), any other node as one server.
// A Redis Cluster whose masters cannot be listed is audited as one server,
// through whichever master the client asks, with the reason kept for its
// finding.
func inspect(ctx context.Context, conn redlock.Conn, l Limits) Node {
	if cc := clusterClient(conn); cc != nil {
		n, err := probeCluster(ctx, conn.Name(), cc, l)
		if err == nil {
			return n
		}
		n = probe(ctx, conn)
		n.shardsErr = err
		return n
	}
	return probe(ctx, conn)
}

// probeCluster lists the masters of a Redis Cluster and their slots, then
// audits every master at once, all within NodeTimeout: the checks of a
// standalone server, its cluster_state and the restart markers of its
// slots. It fails only when the masters cannot be listed.
func probeCluster(ctx context.Context, name string, cc *redis.ClusterClient, l Limits) (Node, error) {
	ctx, cancel := context.WithTimeout(ctx, NodeTimeout)
	defer cancel()
	masters, err := clusterMasters(ctx, cc)
	if err != nil {
		return Node{}, err
	}
	clients := masterClients(ctx, cc)
	n := Node{Node: name, Reachable: true, Cluster: true, Shards: make([]Shard, len(masters))}
	var wg sync.WaitGroup
	for i, m := range masters {
		wg.Go(func() { n.Shards[i] = auditShard(ctx, clients.find(m), m, l) })
	}
	wg.Wait()
	served := make([][]SlotRange, len(masters))
	for i, m := range masters {
		served[i] = m.slots
	}
	n.Uncovered = uncoveredSlots(served)
	n.summariseShards(l)
	return n, nil
}

// master is one master of a Redis Cluster as the cluster lists it.
type master struct {
	id, addr string
	slots    []SlotRange
}

// clusterMasters lists the masters that serve slots, in slot order, by
// CLUSTER SHARDS, or by CLUSTER SLOTS on servers older than Redis 7.
func clusterMasters(ctx context.Context, cc *redis.ClusterClient) ([]master, error) {
	shards, err := cc.ClusterShards(ctx).Result()
	if err == nil {
		return sortMasters(mastersOfShards(shards)), nil
	}
	//lint:ignore SA1019 servers older than Redis 7 have no CLUSTER SHARDS
	slots, err2 := cc.ClusterSlots(ctx).Result()
	if err2 != nil {
		return nil, fmt.Errorf("listing the masters: CLUSTER SHARDS: %w; CLUSTER SLOTS: %w", err, err2)
	}
	return sortMasters(mastersOfSlots(slots)), nil
}

// mastersOfShards takes the masters with slots from a CLUSTER SHARDS reply.
func mastersOfShards(shards []redis.ClusterShard) []master {
	var ms []master
	for _, sh := range shards {
		if len(sh.Slots) == 0 {
			continue
		}
		for _, node := range sh.Nodes {
			if node.Role != "master" {
				continue
			}
			m := master{id: node.ID, addr: shardNodeAddr(node)}
			for _, r := range sh.Slots {
				m.slots = append(m.slots, SlotRange{int(r.Start), int(r.End)})
			}
			ms = append(ms, m)
		}
	}
	return ms
}

// shardNodeAddr returns the address of a node of a CLUSTER SHARDS reply.
func shardNodeAddr(node redis.Node) string {
	host := node.Endpoint
	if host == "" || host == "?" {
		host = node.IP
	}
	port := node.Port
	if port == 0 {
		port = node.TLSPort
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10))
}

// mastersOfSlots takes the masters from a CLUSTER SLOTS reply, whose first
// node of each range is its master.
func mastersOfSlots(slots []redis.ClusterSlot) []master {
	var ms []master
	byID := map[string]int{}
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		node := s.Nodes[0]
		i, ok := byID[node.ID]
		if !ok {
			i = len(ms)
			byID[node.ID] = i
			ms = append(ms, master{id: node.ID, addr: node.Addr})
		}
		ms[i].slots = append(ms[i].slots, SlotRange{s.Start, s.End})
	}
	return ms
}

// sortMasters puts each master's slots in order, and the masters in the
// order of their first slot.
func sortMasters(ms []master) []master {
	byFirst := func(a, b SlotRange) int { return a.First - b.First }
	for _, m := range ms {
		slices.SortFunc(m.slots, byFirst)
	}
	slices.SortFunc(ms, func(a, b master) int { return byFirst(a.slots[0], b.slots[0]) })
	return ms
}

// clientsByMaster holds the cluster client's connection pool of each
// master, by node ID and by address.
type clientsByMaster struct {
	byID, byAddr map[string]*redis.Client
}

// masterClients collects the cluster client's pools of the masters it
// knows, by node ID (from CLUSTER MYID, where the master answers) and by
// address.
func masterClients(ctx context.Context, cc *redis.ClusterClient) clientsByMaster {
	cs := clientsByMaster{byID: map[string]*redis.Client{}, byAddr: map[string]*redis.Client{}}
	var mu sync.Mutex
	// An error here leaves masters unknown; they are audited as unreachable.
	_ = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		id, err := c.ClusterMyID(ctx).Result()
		mu.Lock()
		defer mu.Unlock()
		cs.byAddr[c.Options().Addr] = c
		if err == nil {
			cs.byID[id] = c
		}
		return nil
	})
	return cs
}

// find returns the pool of m, or nil when the cluster client knows none.
func (cs clientsByMaster) find(m master) *redis.Client {
	if c, ok := cs.byID[m.id]; ok {
		return c
	}
	return cs.byAddr[m.addr]
}

// errNoPool is the error of a master the cluster client has no
// connection pool for.
var errNoPool = errors.New("the cluster client has no connection to this master")

// auditShard audits master m through c, its pool: the checks of a
// standalone server, its cluster_state, and, with the quarantine on, the
// restart markers of its slots.
func auditShard(ctx context.Context, c *redis.Client, m master, l Limits) Shard {
	s := Shard{ID: m.id, Slots: m.slots}
	if c == nil {
		s.Master = Node{Node: m.addr, Err: errNoPool}
		return s
	}
	conn := goredis.New(c)
	s.Master = probe(ctx, conn)
	if !s.Master.Reachable {
		return s
	}
	if info, err := conn.Do(ctx, "CLUSTER", "INFO"); err == nil {
		s.ClusterState = parseInfo(replyString(info))["cluster_state"]
	}
	if l.Quarantine {
		s.Markers = readMarkers(ctx, c, m.slots,
			markerJudge{runID: s.Master.RunID, offset: s.Master.ClockOffset, delay: l.RecoveryDelay})
	}
	return s
}

// summariseShards sets a Redis Cluster node's quarantine fields from its
// shards' restart markers: it is Recovering while every slot sits out,
// PartlyRecovering while some do, for as long as the slot that sits out
// longest.
func (n *Node) summariseShards(l Limits) {
	ready, sittingOut := 0, false
	for _, s := range n.Shards {
		m := s.Markers
		ready += m.Ready + slotCountOf(m.Unreadable) // an unreadable slot may be ready
		n.Loading = n.Loading || s.Master.Loading
		n.NoMarker = n.NoMarker || len(m.Unmarked) > 0
		n.Restarted = n.Restarted || len(m.Restarted) > 0
		if !m.sittingOut() {
			continue
		}
		sittingOut = true
		left := m.RecoveringLeft
		if len(m.Unmarked)+len(m.Restarted) > 0 {
			left = l.RecoveryDelay
		}
		n.RecoveringLeft = max(n.RecoveringLeft, left)
	}
	n.Recovering = sittingOut && ready == 0
	n.PartlyRecovering = sittingOut && ready > 0
}

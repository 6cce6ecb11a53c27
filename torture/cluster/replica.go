package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/redlock-go/redlock/redlocktest"
)

// replicaConfig is what every node of a cluster with replicas has in its
// redis.conf: a full synchronization starts at once instead of after
// Redis's default 5 s wait for more replicas.
var replicaConfig = []string{"repl-diskless-sync-delay 0"}

// syncPoll is how often WaitSynced looks at the replica.
const syncPoll = 5 * time.Millisecond

// Pair is a replicated node: two redis-server processes, the master that
// the workers reach through the node's links, and a replica that copies it
// through a replication link of its own, a proxy that can be cut. Promote
// swaps their roles. A pair watched by a Sentinel (see sentinel.go) is
// reached through the Sentinel instead, its replica copies the master
// directly, and the Sentinel promotes it. Its methods are safe for
// concurrent use.
type Pair struct {
	node  int
	procs [2]*redlocktest.Node
	repl  *toxiproxy.Proxy // the replica connects to the master through it; nil with a Sentinel
	links []*Link          // the workers' links to the node
	// sentinel watches the pair as master nodeName(node), when not nil.
	sentinel *redlocktest.Sentinel

	mu     sync.Mutex
	master int               // index in procs of the master
	cut    bool              // the replication link is cut
	cutOn  *redlocktest.Node // with a Sentinel, the master whose replication user is disabled
}

// newPair pairs master with replica, which must be running and empty, and
// makes replica a replica of master through a new replication proxy.
func newPair(ctx context.Context, api *toxiproxy.ApiServer, node int, master, replica *redlocktest.Node, links []*Link) (*Pair, error) {
	p := &Pair{node: node, procs: [2]*redlocktest.Node{master, replica}, links: links}
	p.repl = toxiproxy.NewProxy(api, fmt.Sprintf("repl-n%d", node), "127.0.0.1:0", master.Addr())
	if err := p.repl.Start(); err != nil {
		return nil, fmt.Errorf("cluster: replication proxy for node %d: %w", node, err)
	}
	if err := p.follow(ctx); err != nil {
		p.repl.Stop()
		return nil, err
	}
	return p, nil
}

// Node returns the node's index.
func (p *Pair) Node() int { return p.node }

// Master returns the process the workers reach.
func (p *Pair) Master() *redlocktest.Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.procs[p.master]
}

// Replica returns the process that copies the master.
func (p *Pair) Replica() *redlocktest.Node {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.procs[1-p.master]
}

// follow makes the replica a replica of the master, through the
// replication link, or directly with a Sentinel.
func (p *Pair) follow(ctx context.Context) error {
	addr := p.Master().Addr()
	if p.repl != nil {
		addr = p.repl.Listen
	}
	host, port, _ := strings.Cut(addr, ":")
	if _, err := p.Replica().Do(ctx, "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("cluster: node %d: %w", p.node, err)
	}
	return nil
}

// CutReplication cuts the replication link: the replica's connection is
// closed and its attempts to reconnect are refused, so it receives nothing
// the master writes until HealReplication. With a Sentinel the master
// refuses the replica's credentials instead (see cutUser).
func (p *Pair) CutReplication(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	if p.sentinel != nil {
		p.cutOn = p.procs[p.master]
		return cutUser(ctx, p.node, p.cutOn)
	}
	p.repl.Stop()
	return nil
}

// HealReplication undoes CutReplication; the replica reconnects within a
// second or so and catches up.
func (p *Pair) HealReplication(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		return nil
	}
	if p.sentinel != nil {
		if err := healUser(ctx, p.node, p.cutOn); err != nil {
			return err
		}
		p.cut, p.cutOn = false, nil
		return nil
	}
	if err := p.repl.Start(); err != nil {
		return fmt.Errorf("cluster: node %d: restart replication proxy: %w", p.node, err)
	}
	p.cut = false
	return nil
}

// Promote makes the replica the node's master, whatever state the master
// is in (the caller kills it first, as a failover would find it): it runs
// REPLICAOF NO ONE on the replica, points every worker's link to the node
// at it, and points the replication link at it for the next replica. The
// old master becomes the replica process, to be started and made to follow
// with Rejoin.
func (p *Pair) Promote(ctx context.Context) error {
	if p.sentinel != nil {
		return fmt.Errorf("cluster: node %d: promote: %w", p.node, errSentinelPromotes)
	}
	if _, err := p.Replica().Do(ctx, "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("cluster: node %d: promote: %w", p.node, err)
	}
	return p.swap()
}

// swap makes the replica process the master and the master the replica,
// pointing the node's links and the replication link (if any) at the new
// master.
func (p *Pair) swap() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.master = 1 - p.master
	addr := p.procs[p.master].Addr()
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.redirect(addr))
	}
	if p.repl != nil {
		errs = append(errs, p.repl.Update(&toxiproxy.Proxy{Listen: p.repl.Listen, Upstream: addr, Enabled: !p.cut}))
	}
	return errors.Join(errs...)
}

// Rejoin starts the replica process if it is not running, with whatever
// data it persisted, and makes it a replica of the master; the replication
// link stays as it is.
func (p *Pair) Rejoin(ctx context.Context) error {
	r := p.Replica()
	if !r.Running() {
		if err := r.Start(ctx); err != nil {
			return err
		}
	}
	return p.follow(ctx)
}

// WaitSynced waits until the replica's link to the master is up and the
// replica has everything the master wrote, or ctx ends.
func (p *Pair) WaitSynced(ctx context.Context) error {
	for {
		lag, err := p.Lag(ctx)
		if err == nil && lag == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: node %d: replica not in sync (%v): %w", p.node, err, ctx.Err())
		case <-time.After(syncPoll):
		}
	}
}

// Lag returns how many bytes of the master's replication stream the
// replica has not processed; an error means the replica is not connected.
func (p *Pair) Lag(ctx context.Context) (int64, error) {
	m, err := replInfo(ctx, p.Master())
	if err != nil {
		return 0, err
	}
	r, err := replInfo(ctx, p.Replica())
	if err != nil {
		return 0, err
	}
	if r["master_link_status"] != "up" {
		return 0, fmt.Errorf("cluster: node %d: replica link %s", p.node, r["master_link_status"])
	}
	mo, err1 := strconv.ParseInt(m["master_repl_offset"], 10, 64)
	ro, err2 := strconv.ParseInt(r["slave_repl_offset"], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("cluster: node %d: replication offsets: %w", p.node, err)
	}
	return mo - ro, nil
}

// replInfo returns the fields of INFO replication on n.
func replInfo(ctx context.Context, n *redlocktest.Node) (map[string]string, error) {
	info, err := n.Do(ctx, "INFO", "replication")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// close stops the replication proxy, if any.
func (p *Pair) close() {
	if p.repl != nil {
		p.repl.Stop()
	}
}

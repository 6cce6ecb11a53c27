// Package cluster runs the lock nodes of a torture run: real redis-server
// processes (package redlocktest) and, in front of them, one
// toxiproxy proxy per worker and node, so that the network between each
// worker and each node can be cut, blackholed or slowed on its own. Split
// quorums, where two workers see different majorities, need that
// granularity. A Redis Cluster as the lock node (Options.RedisCluster) has
// no proxies: see rediscluster.go.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/redlock-go/redlock/redlocktest"
)

// DefaultNodes is the number of nodes when Options.Nodes is 0.
const DefaultNodes = 5

// Options configures a Cluster.
type Options struct {
	// Nodes is the number of redis-server nodes; 0 means DefaultNodes.
	Nodes int
	// Workers is the number of workers; each gets its own proxy to every
	// node.
	Workers int
	// AppendFsyncAlways makes every node fsync each write before
	// acknowledging it, so that a killed node comes back with its keys.
	AppendFsyncAlways bool
	// Config holds extra redis.conf lines for every node.
	Config []string
	// ServerPath is the redis-server binary, or a wrapper script that runs
	// it; "" means redis-server on PATH.
	ServerPath string
	// Replicas gives every node a replica, a second redis-server that
	// copies it and that workers do not reach until it is promoted (see
	// Pair).
	Replicas bool
	// RedisCluster makes the one lock node a Redis Cluster of three
	// masters, which workers reach directly (see rediscluster.go); Nodes
	// and Workers are then ignored, and Replicas gives each master a
	// replica of its own.
	RedisCluster bool
	// Sentinel lists the nodes (with Replicas) that one redis-sentinel
	// process watches, each as master MasterName(n): workers reach such a
	// node through the Sentinel (see WorkerURLs), not through its links,
	// its replica copies it directly, and the Sentinel, not the harness,
	// promotes the replica once the master dies (see Pair.AwaitFailover).
	Sentinel []int
}

// Cluster is a set of nodes and the proxies in front of them. Its methods
// are safe for concurrent use.
type Cluster struct {
	tc       *redlocktest.Cluster
	replicas *redlocktest.Cluster  // nil without Options.Replicas
	links    [][]*Link             // [worker][node]
	pairs    []*Pair               // [node], nil without Options.Replicas
	sentinel *redlocktest.Sentinel // nil without Options.Sentinel
	// redisCluster is set by Options.RedisCluster: tc is then one Redis
	// Cluster, and links and pairs are nil.
	redisCluster bool
}

// New starts the nodes and the proxies. ctx bounds the start-up. The caller
// must call Close.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.RedisCluster {
		return newRedisCluster(ctx, opts)
	}
	nodes := opts.Nodes
	if nodes == 0 {
		nodes = DefaultNodes
	}
	if err := checkSentinel(opts, nodes); err != nil {
		return nil, err
	}
	tcOpts := redlocktest.Options{
		// A new deployment, which the run marks ready as an operator does.
		Unmarked:          true,
		Nodes:             nodes,
		AppendFsyncAlways: opts.AppendFsyncAlways,
		Config:            opts.Config,
		ServerPath:        opts.ServerPath,
	}
	if opts.Replicas {
		tcOpts.Config = append(slices.Clone(opts.Config), replicaConfig...)
	}
	if len(opts.Sentinel) > 0 {
		tcOpts.Config = append(tcOpts.Config, sentinelReplicaConfig...)
	}
	tc, err := redlocktest.New(ctx, tcOpts)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{tc: tc}
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	for w := range opts.Workers {
		row := make([]*Link, nodes)
		for n, node := range tc.Nodes() {
			p := toxiproxy.NewProxy(api, fmt.Sprintf("w%d-n%d", w, n), "127.0.0.1:0", node.Addr())
			if err := p.Start(); err != nil {
				return nil, errors.Join(fmt.Errorf("cluster: proxy for worker %d, node %d: %w", w, n, err), c.Close())
			}
			row[n] = &Link{worker: w, node: n, proxy: p, addr: p.Listen}
		}
		c.links = append(c.links, row)
	}
	if opts.Replicas {
		if err := c.startReplicas(ctx, api, tcOpts, opts.Sentinel); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	return c, nil
}

// startReplicas starts a replica for every node and waits until each has
// copied its master, and then the Sentinel watching the nodes of
// sentinel, if any.
func (c *Cluster) startReplicas(ctx context.Context, api *toxiproxy.ApiServer, opts redlocktest.Options, sentinel []int) error {
	var err error
	if c.replicas, err = redlocktest.New(ctx, opts); err != nil {
		return fmt.Errorf("cluster: replicas: %w", err)
	}
	for n, node := range c.tc.Nodes() {
		var p *Pair
		if slices.Contains(sentinel, n) {
			p, err = newSentinelPair(ctx, n, node, c.replicas.Node(n), c.Links(n))
		} else {
			p, err = newPair(ctx, api, n, node, c.replicas.Node(n), c.Links(n))
		}
		if err != nil {
			return err
		}
		c.pairs = append(c.pairs, p)
	}
	for _, p := range c.pairs {
		if err := p.WaitSynced(ctx); err != nil {
			return err
		}
	}
	if len(sentinel) == 0 {
		return nil
	}
	return c.startSentinel(ctx, sentinel)
}

// Pair returns node n's master and replica. It panics if n is out of range
// or the cluster has no replicas.
func (c *Cluster) Pair(n int) *Pair {
	if c.pairs == nil {
		panic("cluster: Pair on a cluster without replicas")
	}
	return c.pairs[n]
}

// Nodes returns the number of lock nodes: 1 for a Redis Cluster.
func (c *Cluster) Nodes() int {
	if c.redisCluster {
		return 1
	}
	return len(c.tc.Nodes())
}

// Node returns node i: with replicas, the process that is its master at
// the time. It panics if i is out of range, and on a Redis Cluster, which
// is many processes (see RedisCluster).
func (c *Cluster) Node(i int) *redlocktest.Node {
	if c.redisCluster {
		panic("cluster: Node on a Redis Cluster")
	}
	if c.pairs != nil {
		return c.pairs[i].Master()
	}
	return c.tc.Node(i)
}

// Workers returns the number of workers the proxies were made for: 0 for a
// Redis Cluster, which has none.
func (c *Cluster) Workers() int { return len(c.links) }

// Link returns the link between worker w and node n. It panics if either
// is out of range.
func (c *Cluster) Link(w, n int) *Link { return c.links[w][n] }

// Links returns every link to node n, one per worker.
func (c *Cluster) Links(n int) []*Link {
	out := make([]*Link, len(c.links))
	for w := range c.links {
		out[w] = c.links[w][n]
	}
	return out
}

// WorkerURLs returns the redis:// URLs through which worker w reaches the
// nodes, in node order: for a Redis Cluster, its one URL (see DirectURLs);
// for a node a Sentinel watches, the Sentinel's URL of its master.
func (c *Cluster) WorkerURLs(w int) []string {
	if c.redisCluster {
		return c.DirectURLs()
	}
	urls := make([]string, len(c.links[w]))
	for n, l := range c.links[w] {
		urls[n] = "redis://" + l.addr
		if u, ok := c.sentinelURL(n); ok {
			urls[n] = u
		}
	}
	return urls
}

// DirectURLs returns the nodes' own URLs (their masters' at the time),
// bypassing every proxy, for the harness's administrative traffic. A Redis
// Cluster has one, with a cluster parameter and every master as a seed
// (see goredis.NewURL).
func (c *Cluster) DirectURLs() []string {
	if c.redisCluster {
		return []string{c.redisClusterURL()}
	}
	urls := make([]string, c.Nodes())
	for i := range urls {
		urls[i] = c.Node(i).URL()
	}
	return urls
}

// Close stops the Sentinel first, so that it fails nothing over, then
// every proxy, node and replica.
func (c *Cluster) Close() error {
	var errs []error
	if c.sentinel != nil {
		errs = append(errs, c.sentinel.Close())
	}
	for _, p := range c.pairs {
		p.close()
	}
	if c.replicas != nil {
		errs = append(errs, c.replicas.Close())
	}
	for _, row := range c.links {
		for _, l := range row {
			if l != nil {
				l.proxy.Stop()
			}
		}
	}
	return errors.Join(append(errs, c.tc.Close())...)
}

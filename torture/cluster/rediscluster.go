package cluster

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/redlock-go/redlock/redlocktest"
)

// A Cluster made with Options.RedisCluster has one lock node, a Redis
// Cluster of three masters (redlocktest.Options.RedisCluster), with a
// replica each given Options.Replicas, and no proxies: a cluster client
// learns the masters' own addresses from CLUSTER SLOTS and follows MOVED
// and ASK redirections to them, so a proxy per worker would be bypassed at
// the first redirection. Workers reach the
// masters directly, and faults act on the processes (kill, restart) and on
// the slot map (resharding) instead of the network.

// migrateBatch is how many keys MoveSlot moves per MIGRATE; migrateTimeout
// is MIGRATE's own timeout, in milliseconds.
const (
	migrateBatch   = 100
	migrateTimeout = "5000"
)

// redisClusterMasters is the number of masters of a Redis Cluster.
const redisClusterMasters = 3

// newRedisCluster starts the Redis Cluster of a Cluster made with
// Options.RedisCluster.
func newRedisCluster(ctx context.Context, opts Options) (*Cluster, error) {
	replicas := 0
	if opts.Replicas {
		replicas = 1
	}
	tc, err := redlocktest.New(ctx, redlocktest.Options{
		Unmarked:          true, // the run marks them ready as an operator does
		Nodes:             redisClusterMasters,
		RedisCluster:      true,
		ClusterReplicas:   replicas,
		AppendFsyncAlways: opts.AppendFsyncAlways,
		Config:            opts.Config,
		ServerPath:        opts.ServerPath,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return &Cluster{tc: tc, redisCluster: true}, nil
}

// RedisCluster returns the Redis Cluster that is the one lock node, whose
// MasterOf, ReplicasOf and WaitRedisCluster tell who serves a slot now and
// whether the cluster is whole, or nil on a cluster of independent nodes.
func (c *Cluster) RedisCluster() *redlocktest.Cluster {
	if !c.redisCluster {
		return nil
	}
	return c.tc
}

// Masters returns the masters a Redis Cluster formed with, each with its
// share of the slots then, replicas left out. It panics on a cluster of
// independent nodes.
func (c *Cluster) Masters() []*redlocktest.Node {
	c.mustBeRedisCluster("Masters")
	return c.tc.Nodes()[:redisClusterMasters]
}

// redisClusterURL returns the goredis URL of the Redis Cluster: the first
// master as host, the others as addr parameters, all of them seeds.
func (c *Cluster) redisClusterURL() string {
	addrs := c.tc.Addrs()
	q := url.Values{"cluster": {"1"}, "addr": addrs[1:]}
	return (&url.URL{Scheme: "redis", Host: addrs[0], RawQuery: q.Encode()}).String()
}

// mustBeRedisCluster panics with a message naming method if the cluster is
// not a Redis Cluster: calling it on independent nodes is a mistake in the
// caller.
func (c *Cluster) mustBeRedisCluster(method string) {
	if !c.redisCluster {
		panic("cluster: " + method + " on independent nodes")
	}
}

// MoveSlot moves slot, with its keys, from the master that serves it to
// the master to, as redis-cli --cluster reshard does: to imports it, its
// master migrates it, MIGRATE moves its keys a batch at a time (clients
// are sent ASK for the keys already moved), and every master is told the
// new owner, so that no master redirects to the old one and every master
// agrees on it at once. It returns the number of keys moved; moving a slot
// to the master that serves it does nothing. Keys must not contain white
// space. It panics on a cluster of independent nodes; replicas, if any,
// learn of the move by gossip.
func (c *Cluster) MoveSlot(ctx context.Context, slot int, to *redlocktest.Node) (int, error) {
	c.mustBeRedisCluster("MoveSlot")
	from, err := c.tc.MasterOf(ctx, slot)
	if err != nil || from == to {
		return 0, err
	}
	s := strconv.Itoa(slot)
	fromID, err := from.Do(ctx, "CLUSTER", "MYID")
	if err != nil {
		return 0, fmt.Errorf("cluster: move slot %d: %w", slot, err)
	}
	toID, err := to.Do(ctx, "CLUSTER", "MYID")
	if err != nil {
		return 0, fmt.Errorf("cluster: move slot %d: %w", slot, err)
	}
	if _, err := to.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", fromID); err != nil {
		return 0, fmt.Errorf("cluster: move slot %d: %w", slot, err)
	}
	if _, err := from.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", toID); err != nil {
		return 0, fmt.Errorf("cluster: move slot %d: %w", slot, err)
	}
	moved, err := migrateKeys(ctx, s, from, to)
	if err != nil {
		return moved, fmt.Errorf("cluster: move slot %d: %w", slot, err)
	}
	// The new owner first, then the old one, then the others, as
	// redis-cli does: the old owner stops serving the slot only once the
	// new one does.
	order := []*redlocktest.Node{to, from}
	for _, n := range c.Masters() {
		if n != to && n != from {
			order = append(order, n)
		}
	}
	for _, n := range order {
		if _, err := n.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", toID); err != nil {
			return moved, fmt.Errorf("cluster: move slot %d: tell %s: %w", slot, n.Addr(), err)
		}
	}
	return moved, nil
}

// migrateKeys moves every key of slot s from from to to, a batch at a
// time, and returns how many it moved.
func migrateKeys(ctx context.Context, s string, from, to *redlocktest.Node) (int, error) {
	moved := 0
	for {
		reply, err := from.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(migrateBatch))
		if err != nil {
			return moved, err
		}
		keys := strings.Fields(reply)
		if len(keys) == 0 {
			return moved, nil
		}
		args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port()), "", "0", migrateTimeout, "KEYS"}, keys...)
		if _, err := from.Do(ctx, args...); err != nil {
			return moved, err
		}
		moved += len(keys)
	}
}

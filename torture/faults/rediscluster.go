package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/torture/history"
)

// The faults of a Redis Cluster lock node (cluster.Options.RedisCluster)
// act on the master that serves the slot of the lock key, found by asking
// the cluster (redlocktest.Cluster.MasterOf) when they strike, so that they
// hit the keys the workers lock wherever resharding or a failover has put
// them. A grant of several keys in different slots (a set taken together)
// has its first key's slot hit.

// shardTimeout bounds one action on a Redis Cluster's masters: finding the
// slot's master, a restart, moving a slot.
const shardTimeout = 10 * time.Second

// shardName names master m of the Redis Cluster lock node n0 in targets:
// "n0/m<m>".
func shardName(m *redlocktest.Node) string { return fmt.Sprintf("%s/m%d", nodeName(0), m.Index()) }

// RestartShardOnGrant kills with SIGKILL the Redis Cluster master that
// serves the slot of a lock right after the lock is granted, while the
// holder is in its critical section, and starts it again at once. Without
// persistence the master comes back with its slots (its nodes.conf) and
// without their keys, after Redis's own 2 s before a restarted master
// serves again. The lock node must be a Redis Cluster.
type RestartShardOnGrant struct {
	// Cooldown is the least time between two restarts.
	Cooldown time.Duration
}

// Name describes the fault.
func (f RestartShardOnGrant) Name() string {
	return fmt.Sprintf("kill -9 and restart the Redis Cluster master of the lock's slot right after a grant, every %v at most", f.Cooldown)
}

// Run implements Fault.
func (f RestartShardOnGrant) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	return onGrants(ctx, env, f.Cooldown, func(ev history.Event) error {
		actx, cancel := context.WithTimeout(context.Background(), shardTimeout)
		defer cancel()
		slot := redlocktest.KeySlot(grantedLocks(ev)[0].Key)
		m, err := env.Cluster.RedisCluster().MasterOf(actx, slot)
		if err != nil {
			return err
		}
		target := shardName(m)
		id := env.start("restart", target, fmt.Sprintf("kill -9 the master of slot %d while %s holds the lock, start it again empty", slot, ev.Process))
		err = m.Kill()
		if err == nil {
			err = m.Start(actx)
		}
		env.end(id, "restart", target)
		return err
	})
}

// ReshardOnGrant moves the slot of a lock to another Redis Cluster master
// right after the lock is granted, while the holder is in its critical
// section (Cluster.MoveSlot: the slot's keys go with it, the lock's
// included), to the next master in turn, over and over. The lock node must
// be a Redis Cluster.
type ReshardOnGrant struct {
	// Cooldown is the least time between two moves.
	Cooldown time.Duration
}

// Name describes the fault.
func (f ReshardOnGrant) Name() string {
	return fmt.Sprintf("move the lock's slot, with its keys, to the next Redis Cluster master right after a grant, every %v at most", f.Cooldown)
}

// Run implements Fault.
func (f ReshardOnGrant) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	masters := env.Cluster.Masters()
	return onGrants(ctx, env, f.Cooldown, func(ev history.Event) error {
		actx, cancel := context.WithTimeout(context.Background(), shardTimeout)
		defer cancel()
		slot := redlocktest.KeySlot(grantedLocks(ev)[0].Key)
		from, err := env.Cluster.RedisCluster().MasterOf(actx, slot)
		if err != nil {
			return err
		}
		to := masters[(slices.Index(masters, from)+1)%len(masters)]
		id := env.start("reshard", shardName(from), fmt.Sprintf("move slot %d to %s while %s holds the lock", slot, shardName(to), ev.Process))
		moved, err := env.Cluster.MoveSlot(actx, slot, to)
		env.endDetail(id, "reshard", shardName(from), fmt.Sprintf("%d keys moved to %s", moved, shardName(to)))
		return err
	})
}

package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/torture/history"
)

// refusedMasterAuth is the masterauth a cut-off replica is given: its
// master has no password, so it refuses the AUTH the replica sends first
// when it reconnects, and the replica cannot resynchronize.
const refusedMasterAuth = "torture-cut-off"

// FailoverShardOnGrant fails the Redis Cluster master that serves the slot
// of Env.Key over to its replica right after a lock of a key in that slot
// is granted, while the holder is in its critical section: the master is killed with SIGKILL,
// the replica takes its slots at once with CLUSTER FAILOVER TAKEOVER (an
// automatic failover would wait 2 to 3 s for the master to be declared
// failed and for an election), and the old master starts again at once,
// empty, and rejoins as the new master's replica. Before the next failover
// the cluster is whole again, with every replica's link up. The lock node
// must be a Redis Cluster with replicas.
type FailoverShardOnGrant struct {
	// Lagging cuts the replica off its master before the grant, so that it
	// misses the grant the failover follows, as a replica that lags or was
	// cut off does: the replica is given a masterauth its master refuses
	// and its link is closed (CLIENT KILL TYPE replica), so it cannot
	// resynchronize, while its cluster bus stays up and the cluster does
	// not see it fail. Without it the replica keeps copying the master up
	// to the kill.
	Lagging bool
	// CutFor is how long the link stays cut before the fault waits for a
	// grant. A TTL or more lets every lock the replica copied before the
	// cut expire on it, releases it never heard of included, so that it
	// holds no lock at all when promoted.
	CutFor time.Duration
	// Cooldown is the least time from a failover to the next cut.
	Cooldown time.Duration
}

// shard is the master that serves the slot of Env.Key and the replica the
// next failover promotes.
type shard struct {
	slot            int
	master, replica *redlocktest.Node
	cutID           int64 // the cut in the history, 0 when not cut
}

// Name describes the fault.
func (f FailoverShardOnGrant) Name() string {
	name := fmt.Sprintf("fail the Redis Cluster master of the lock's slot over to its replica right after a grant, every %v at most", f.Cooldown)
	if f.Lagging {
		name += fmt.Sprintf(", the replica cut off for %v before the grant", f.CutFor)
	}
	return name
}

// Run implements Fault.
func (f FailoverShardOnGrant) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	grants, cancel := env.grants()
	defer cancel()
	for {
		sh, err := f.prepare(ctx, env)
		if err != nil || ctx.Err() != nil {
			return errors.Join(err, f.heal(env, sh))
		}
		ev, lock, ok := nextGrantIn(ctx, grants, sh.slot)
		if !ok {
			return f.heal(env, sh)
		}
		if err := f.failover(env, sh, ev.Process, lock.Key); err != nil {
			return err
		}
		if !sleep(ctx, f.Cooldown) {
			return nil
		}
	}
}

// nextGrantIn drops the grants seen so far and waits for the next one
// that holds a key in slot, which it returns with that key's lock; ok is
// false when ctx ended first. Every grant of a lock holds the lock key;
// of a semaphore or a set, only some hold a key in slot.
func nextGrantIn(ctx context.Context, grants <-chan history.Event, slot int) (ev history.Event, lock history.HeldLock, ok bool) {
	ev, ok = nextGrant(ctx, grants)
	for ok {
		for _, l := range grantedLocks(ev) {
			if redlocktest.KeySlot(l.Key) == slot {
				return ev, l, true
			}
		}
		select {
		case <-ctx.Done():
			ok = false
		case ev = <-grants:
		}
	}
	return ev, lock, false
}

// prepare waits until the cluster is whole, finds the slot's master and
// its replica, and cuts the replica off for a Lagging failover. A nil
// shard with a nil error means ctx ended.
func (f FailoverShardOnGrant) prepare(ctx context.Context, env *Env) (*shard, error) {
	rc := env.Cluster.RedisCluster()
	wctx, cancel := context.WithTimeout(ctx, shardTimeout)
	defer cancel()
	if err := rc.WaitRedisCluster(wctx); err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, err
	}
	sh := &shard{slot: redlocktest.KeySlot(env.Key)}
	var err error
	if sh.master, err = rc.MasterOf(wctx, sh.slot); err != nil {
		return nil, err
	}
	replicas, err := rc.ReplicasOf(wctx, sh.master)
	if err != nil {
		return nil, err
	}
	if len(replicas) == 0 {
		return nil, fmt.Errorf("faults: %s has no replica", shardName(sh.master))
	}
	sh.replica = replicas[0]
	if !f.Lagging {
		return sh, nil
	}
	sh.cutID = env.start("cut-replication", shardName(sh.replica), "the replica receives nothing from its master "+shardName(sh.master))
	if _, err := sh.replica.Do(wctx, "CONFIG", "SET", "masterauth", refusedMasterAuth); err != nil {
		return sh, err
	}
	if _, err := sh.master.Do(wctx, "CLIENT", "KILL", "TYPE", "replica"); err != nil {
		return sh, err
	}
	sleep(ctx, f.CutFor)
	return sh, nil
}

// failover kills the master, promotes the replica, heals the cut and
// starts the old master again, recording what the replica had of key,
// which holder has just been granted.
func (f FailoverShardOnGrant) failover(env *Env, sh *shard, holder, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), shardTimeout)
	defer cancel()
	detail := fmt.Sprintf("kill -9 the master of slot %d and promote its replica %s while %s holds %s; %s",
		sh.slot, shardName(sh.replica), holder, key, replicaKeys(ctx, sh.replica, key))
	id := env.start("failover", shardName(sh.master), detail)
	err := sh.master.Kill()
	if err == nil {
		_, err = sh.replica.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER")
	}
	err = errors.Join(err, f.heal(env, sh))
	if err == nil {
		err = sh.master.Start(ctx)
	}
	env.end(id, "failover", shardName(sh.master))
	return err
}

// heal gives the replica of a Lagging failover back an empty masterauth,
// so that it can resynchronize (or, once promoted, that a later failover
// can make it a replica again), and records the end of the cut.
func (f FailoverShardOnGrant) heal(env *Env, sh *shard) error {
	if sh == nil || sh.cutID == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shardTimeout)
	defer cancel()
	_, err := sh.replica.Do(ctx, "CONFIG", "SET", "masterauth", "")
	env.end(sh.cutID, "cut-replication", shardName(sh.replica))
	sh.cutID = 0
	return err
}

// replicaKeys says whether replica holds key, as it is about to be
// promoted. A cluster replica redirects reads of keys to its master, so it
// is asked with SCAN, which lists the keys it holds and has not seen
// expire; key must not contain glob characters.
func replicaKeys(ctx context.Context, replica *redlocktest.Node, key string) string {
	cursor := "0"
	for {
		reply, err := replica.Do(ctx, "SCAN", cursor, "MATCH", key, "COUNT", "1000")
		if err != nil {
			return fmt.Sprintf("replica unreadable: %v", err)
		}
		fields := strings.Fields(reply)
		if len(fields) == 0 {
			return fmt.Sprintf("replica answered SCAN with %q", reply)
		}
		if slices.Contains(fields[1:], key) {
			return "the replica has a lock"
		}
		if cursor = fields[0]; cursor == "0" {
			return "the replica has no lock"
		}
	}
}

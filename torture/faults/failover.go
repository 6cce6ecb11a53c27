package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/torture/cluster"
	"github.com/redlock-go/redlock/torture/history"
)

// syncTimeout bounds the wait for a rejoined replica to catch up.
const syncTimeout = 10 * time.Second

// FailoverOnGrant fails a replicated node (see cluster.Pair) over to its
// replica right after a lock is granted, while the holder is in its
// critical section: the master is killed with SIGKILL, the replica is
// promoted (REPLICAOF NO ONE), and every worker's link to the node is
// pointed at it, so that the workers reach it under the node's name, as a
// failover behind a stable address does. After Cooldown the old master
// restarts empty and rejoins as the new master's replica; once it has
// caught up, the next grant fails the node over again. The cluster must
// have replicas.
type FailoverOnGrant struct {
	// Node is the node to fail over.
	Node int
	// Lagging cuts the replication link once the replica has caught up (and
	// LinkUp has passed), so that the replica misses the grant the failover
	// follows, as a replica that lags or was cut off does. Without it the
	// replica keeps copying the master up to the kill.
	Lagging bool
	// LinkUp is how long the replication link stays up after the replica
	// caught up before Lagging cuts it.
	LinkUp time.Duration
	// CutFor is how long the link stays cut before the fault waits for a
	// grant. A TTL or more lets every lock the replica copied before the
	// cut expire on it, releases it never heard of included, so that it
	// holds no lock at all when promoted.
	CutFor time.Duration
	// GrantWait, when positive, fails the node over after this long without
	// a grant, for load under which no grant can happen while the link is
	// cut (grants that wait for a replica).
	GrantWait time.Duration
	// Cooldown is how long the old master stays down after a failover.
	Cooldown time.Duration
	// Sentinel leaves the promotion to the Sentinel that watches the node
	// (cluster.Options.Sentinel): the master is killed and the fault waits
	// until the Sentinel gives the replica as the master.
	Sentinel bool
	// Recut, when positive, bounds the wait for a grant once the link is
	// cut (Lagging): past it, the link is healed, and cut again once the
	// replica caught up. A Sentinel promotes no replica whose link was
	// down for ten times its down-after before its master went down, and
	// grants may come seldom (Writers).
	Recut time.Duration
	// Writers waits for a grant that is not a reader's (a read-write
	// lock's rows): a reader's lock lost with the failover lets in only
	// other readers, who share the name with it, and shows nothing.
	Writers bool
}

// Name describes the fault.
func (f FailoverOnGrant) Name() string {
	name := fmt.Sprintf("fail n%d over to its replica right after a grant, every %v at most", f.Node, f.Cooldown)
	if f.Sentinel {
		name = fmt.Sprintf("kill -9 n%d's master right after a grant for its Sentinel to promote the replica, every %v at most", f.Node, f.Cooldown)
	}
	if f.Lagging {
		name += fmt.Sprintf(", the replication link cut %v after the replica caught up and for %v before the grant", f.LinkUp, f.CutFor)
	}
	if f.GrantWait > 0 {
		name += fmt.Sprintf(", or after %v without a grant", f.GrantWait)
	}
	if f.Recut > 0 {
		name += fmt.Sprintf(", the link healed and cut again after %v without a grant", f.Recut)
	}
	if f.Writers {
		name += ", a writer's grant only"
	}
	return name
}

// Run implements Fault.
func (f FailoverOnGrant) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	pair := env.Cluster.Pair(f.Node)
	grants, cancel := env.grants()
	if f.Writers {
		cancel()
		grants, cancel = env.writerGrants()
	}
	defer cancel()
	for {
		lagID, err := f.prepare(ctx, env, pair)
		if err != nil || ctx.Err() != nil {
			return errors.Join(err, f.heal(env, pair, lagID))
		}
		ev, fresh, ok := f.awaitGrant(ctx, grants, lagID)
		if !ok {
			return f.heal(env, pair, lagID)
		}
		if !fresh && f.recuts(lagID) {
			if err := f.heal(env, pair, lagID); err != nil {
				return err
			}
			continue // cut too long: the replica would not be promoted
		}
		if err := f.failover(env, pair, ev, fresh); err != nil {
			return errors.Join(err, f.heal(env, pair, lagID))
		}
		err = f.heal(env, pair, lagID)
		if !sleep(ctx, f.Cooldown) || err != nil {
			return err
		}
	}
}

// prepare brings the old master back as a replica if it is down, waits for
// the replica to catch up, and cuts the replication link for a Lagging
// failover, returning the id of the cut in the history (0 when not cut).
func (f FailoverOnGrant) prepare(ctx context.Context, env *Env, pair *cluster.Pair) (int64, error) {
	if !pair.Replica().Running() {
		id := env.start("rejoin", nodeName(f.Node), "start the old master empty, as the new master's replica")
		rctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
		err := pair.Rejoin(rctx)
		cancel()
		env.end(id, "rejoin", nodeName(f.Node))
		if err != nil {
			return 0, err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if err := pair.WaitSynced(sctx); err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		return 0, err
	}
	if !f.Lagging || !sleep(ctx, f.LinkUp) {
		return 0, nil
	}
	id := env.start("cut-replication", nodeName(f.Node), "the replica receives nothing from its master")
	if err := pair.CutReplication(ctx); err != nil {
		return id, err
	}
	sleep(ctx, f.CutFor)
	return id, nil
}

// awaitGrant drops the grants seen so far and waits for the next one, or
// for GrantWait when positive, or for Recut when positive and the link is
// cut (lagID not 0); ok is false when ctx ended first. fresh is false when
// GrantWait or Recut passed without a grant; ev is then the last grant
// dropped, if any.
func (f FailoverOnGrant) awaitGrant(ctx context.Context, grants <-chan history.Event, lagID int64) (ev history.Event, fresh, ok bool) {
	for drained := false; !drained; {
		select {
		case ev = <-grants:
		default:
			drained = true
		}
	}
	var timeout <-chan time.Time
	if wait := f.grantWait(lagID); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return ev, false, false
	case ev = <-grants:
		return ev, true, true
	case <-timeout:
		return ev, false, true
	}
}

// grantWait returns how long awaitGrant waits for a grant, or 0 for as
// long as it takes: GrantWait, and Recut while the link is cut, whichever
// is shorter.
func (f FailoverOnGrant) grantWait(lagID int64) time.Duration {
	if f.recuts(lagID) {
		return f.Recut
	}
	return f.GrantWait
}

// recuts reports whether the wait for a grant ends with a new cut, rather
// than with a failover, when no grant came: Recut is set, shorter than
// GrantWait if that is, and the link is cut (lagID not 0).
func (f FailoverOnGrant) recuts(lagID int64) bool {
	return lagID != 0 && f.Recut > 0 && (f.GrantWait <= 0 || f.Recut < f.GrantWait)
}

// failover kills the master, promotes the replica and records what the
// replica had of the lock granted last (in ev, fresh when it triggered the
// failover).
func (f FailoverOnGrant) failover(env *Env, pair *cluster.Pair, ev history.Event, fresh bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	detail := "while " + ev.Process + " holds the lock, "
	if !fresh {
		detail = "after no grant for " + f.GrantWait.String() + ", "
		if ev.Process != "" {
			detail += "the last to " + ev.Process + ", "
		}
	}
	if ev.Process != "" {
		detail += replicaHas(ctx, pair.Replica(), ev)
	}
	what := "kill -9 the master and promote its replica "
	if f.Sentinel {
		what = "kill -9 the master; its Sentinel promotes the replica "
	}
	id := env.start("failover", nodeName(f.Node), what+strings.TrimSuffix(detail, ", "))
	err := pair.Master().Kill()
	if f.Sentinel {
		err = errors.Join(err, pair.AwaitFailover(ctx))
	} else {
		err = errors.Join(err, pair.Promote(ctx))
	}
	env.end(id, "failover", nodeName(f.Node))
	return err
}

// replicaHas says whether replica holds the lock granted in ev (the first
// of a set), as it is about to be promoted. A reader's share is its token
// in a sorted set at the key, which GET refuses.
func replicaHas(ctx context.Context, replica *redlocktest.Node, ev history.Event) string {
	lock := grantedLocks(ev)[0]
	v, err := replica.Do(ctx, "GET", lock.Key)
	if err != nil && strings.Contains(err.Error(), "WRONGTYPE") {
		if _, err = replica.Do(ctx, "ZSCORE", lock.Key, lock.Token); err == nil {
			v = lock.Token
		}
	}
	switch {
	case v == lock.Token:
		return "whose lock the replica has"
	case errors.Is(err, redlocktest.ErrNil):
		return "whose lock the replica lacks"
	case err != nil:
		return fmt.Sprintf("(replica unreadable: %v)", err)
	}
	return "whose lock the replica has for another token"
}

// heal heals the replication link cut as lagID, if any.
func (f FailoverOnGrant) heal(env *Env, pair *cluster.Pair, lagID int64) error {
	if lagID == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	err := pair.HealReplication(ctx)
	env.end(lagID, "cut-replication", nodeName(f.Node))
	return err
}

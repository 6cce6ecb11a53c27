package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redlock-go/redlock/torture/history"
)

// restartTimeout bounds a node restart done while undoing a fault, after
// the run's context has ended.
const restartTimeout = 10 * time.Second

// KillNodes kills a random minority of the nodes with SIGKILL, keeps them
// down for a while and starts them again, over and over. Nodes without
// persistence come back empty.
type KillNodes struct {
	// DownMin and DownMax bound how long the nodes stay down.
	DownMin, DownMax time.Duration
	// GapMin and GapMax bound the time between rounds.
	GapMin, GapMax time.Duration
}

// Name describes the fault.
func (f KillNodes) Name() string {
	return fmt.Sprintf("kill -9 a minority for %v-%v, restart", f.DownMin, f.DownMax)
}

// Run implements Fault.
func (f KillNodes) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	return minorityRounds(ctx, env, rng, rounds{
		gapMin: f.GapMin, gapMax: f.GapMax, downMin: f.DownMin, downMax: f.DownMax,
		kind: "kill", detail: "kill -9",
		down: func(v int) error { return env.Cluster.Node(v).Kill() },
		up:   func(v int) error { return startNode(env, v) },
	})
}

// rounds describes a fault that takes a random minority of the nodes down
// for a while, brings them back, and does it again after a gap.
type rounds struct {
	gapMin, gapMax, downMin, downMax time.Duration
	kind, detail                     string // for the history
	down, up                         func(node int) error
}

// minorityRounds runs r until ctx ends; nodes taken down are always brought
// back, even when ctx ends while they are down.
func minorityRounds(ctx context.Context, env *Env, rng *rand.Rand, r rounds) error {
	n := env.Cluster.Nodes()
	for sleep(ctx, between(rng, r.gapMin, r.gapMax)) {
		victims := pick(rng, n, 1+rng.IntN(n/2))
		ids := make([]int64, len(victims))
		var errs []error
		for i, v := range victims {
			ids[i] = env.start(r.kind, nodeName(v), r.detail)
			errs = append(errs, r.down(v))
		}
		sleep(ctx, between(rng, r.downMin, r.downMax))
		for i, v := range victims {
			errs = append(errs, r.up(v))
			env.end(ids[i], r.kind, nodeName(v))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// startNode starts node v again, even after the run's context ended.
func startNode(env *Env, v int) error {
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	return env.Cluster.Node(v).Start(ctx)
}

// RestartOnGrant kills one node with SIGKILL and starts it again right after
// a lock is granted, while the new holder is in its critical section: the
// node loses the holder's key unless it persists it (appendfsync always),
// and votes again at once unless the restart quarantine keeps it out.
type RestartOnGrant struct {
	// Node is the node to restart.
	Node int
	// Cooldown is the least time between two restarts.
	Cooldown time.Duration
	// Snapshot makes the node reload an RDB snapshot taken before the grant,
	// as a node with Redis's default persistence does after a crash: the
	// node is saved (SAVE) when the fault starts and right after each
	// restart, so it comes back with its restart marker and without the
	// locks granted since.
	Snapshot bool
	// PowerLoss makes the node lose the end of its append-only file, as a
	// node with appendfsync everysec does when its machine loses power
	// before the next fsync: the append-only files are copied aside when
	// the fault starts and right after each restart, and put back between
	// the kill and the start, so the node comes back with its restart
	// marker and without the locks granted since. The nodes must run with
	// appendonly yes.
	PowerLoss bool
	// MarkReady calls the library's Client.MarkReady on every node right
	// after each restart, as an operator's deploy script running
	// "redlock init" would; ForceReady passes force.
	MarkReady, ForceReady bool
}

// Name describes the fault.
func (f RestartOnGrant) Name() string {
	name := fmt.Sprintf("kill -9 and restart n%d right after a grant, every %v at most", f.Node, f.Cooldown)
	switch {
	case f.Snapshot:
		name += ", reloading a snapshot taken before the grant"
	case f.PowerLoss:
		name += ", losing the append-only file's writes since before the grant"
	}
	if f.MarkReady {
		name += fmt.Sprintf(", then MarkReady(force=%v)", f.ForceReady)
	}
	return name
}

// save takes the node's RDB snapshot, for a Snapshot restart, or copies its
// append-only files aside, for a PowerLoss restart.
func (f RestartOnGrant) save(env *Env) error {
	switch {
	case f.Snapshot:
		ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
		defer cancel()
		_, err := env.Cluster.Node(f.Node).Do(ctx, "SAVE")
		return err
	case f.PowerLoss:
		return copyAOF(env.Cluster.Node(f.Node).Dir())
	}
	return nil
}

// restart kills the node, puts back the append-only files of a PowerLoss
// restart, starts the node, marks it ready if asked to, and saves it again.
func (f RestartOnGrant) restart(env *Env) error {
	err := env.Cluster.Node(f.Node).Kill()
	if f.PowerLoss {
		err = errors.Join(err, restoreAOF(env.Cluster.Node(f.Node).Dir()))
	}
	if err = errors.Join(err, startNode(env, f.Node)); err != nil {
		return err
	}
	if f.MarkReady {
		if err := markReady(env, f.Node, f.ForceReady); err != nil {
			return err
		}
	}
	return f.save(env)
}

// Run implements Fault.
func (f RestartOnGrant) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	if err := f.save(env); err != nil {
		return err
	}
	return onGrants(ctx, env, f.Cooldown, func(ev history.Event) error {
		id := env.start("restart", nodeName(f.Node), "kill -9 while "+ev.Process+" holds the lock, start again")
		err := f.restart(env)
		env.end(id, "restart", nodeName(f.Node))
		return err
	})
}

// PauseNodes stops a random minority of the nodes with SIGSTOP for a while
// and continues them with SIGCONT, over and over. Requests to a paused node
// wait; the client gives up on it after its node timeout.
type PauseNodes struct {
	// PauseMin and PauseMax bound how long the nodes stay stopped.
	PauseMin, PauseMax time.Duration
	// GapMin and GapMax bound the time between rounds.
	GapMin, GapMax time.Duration
}

// Name describes the fault.
func (f PauseNodes) Name() string {
	return fmt.Sprintf("SIGSTOP a minority for %v-%v", f.PauseMin, f.PauseMax)
}

// Run implements Fault.
func (f PauseNodes) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	return minorityRounds(ctx, env, rng, rounds{
		gapMin: f.GapMin, gapMax: f.GapMax, downMin: f.PauseMin, downMax: f.PauseMax,
		kind: "pause-node", detail: "SIGSTOP",
		down: func(v int) error { return env.Cluster.Node(v).Pause() },
		up:   func(v int) error { return env.Cluster.Node(v).Resume() },
	})
}

package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Partition isolates a random minority of the nodes from every worker for a
// while and heals, over and over.
type Partition struct {
	// Hold blackholes the links (requests time out) instead of cutting them
	// (requests are refused at once).
	Hold bool
	// DurMin and DurMax bound how long a partition lasts.
	DurMin, DurMax time.Duration
	// GapMin and GapMax bound the time between partitions.
	GapMin, GapMax time.Duration
}

// Name describes the fault.
func (f Partition) Name() string {
	how := "cut"
	if f.Hold {
		how = "blackhole"
	}
	return fmt.Sprintf("%s a minority from all workers for %v-%v", how, f.DurMin, f.DurMax)
}

// Run implements Fault.
func (f Partition) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	n := env.Cluster.Nodes()
	kind := "partition"
	if f.Hold {
		kind = "blackhole"
	}
	for sleep(ctx, between(rng, f.GapMin, f.GapMax)) {
		victims := pick(rng, n, 1+rng.IntN(n/2))
		ids := make([]int64, len(victims))
		var errs []error
		for i, v := range victims {
			ids[i] = env.start(kind, nodeName(v), "all workers")
			for _, l := range env.Cluster.Links(v) {
				if f.Hold {
					errs = append(errs, l.Hold())
				} else {
					l.Cut()
				}
			}
		}
		sleep(ctx, between(rng, f.DurMin, f.DurMax))
		for i, v := range victims {
			for _, l := range env.Cluster.Links(v) {
				errs = append(errs, l.Heal())
			}
			env.end(ids[i], kind, nodeName(v))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// SlowNodes adds latency to every link of a random minority of the nodes
// for a while, over and over. A latency near the node timeout makes the
// client give up on those nodes during some acquisitions and not others.
type SlowNodes struct {
	// Latency and Jitter set the delay each way.
	Latency, Jitter time.Duration
	// DurMin and DurMax bound how long the nodes stay slow.
	DurMin, DurMax time.Duration
	// GapMin and GapMax bound the time between rounds.
	GapMin, GapMax time.Duration
}

// Name describes the fault.
func (f SlowNodes) Name() string {
	return fmt.Sprintf("%v±%v latency to a minority for %v-%v", f.Latency, f.Jitter, f.DurMin, f.DurMax)
}

// Run implements Fault.
func (f SlowNodes) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	n := env.Cluster.Nodes()
	detail := fmt.Sprintf("%v±%v each way", f.Latency, f.Jitter)
	for sleep(ctx, between(rng, f.GapMin, f.GapMax)) {
		victims := pick(rng, n, 1+rng.IntN(n/2))
		ids := make([]int64, len(victims))
		var errs []error
		for i, v := range victims {
			ids[i] = env.start("latency", nodeName(v), detail)
			for _, l := range env.Cluster.Links(v) {
				errs = append(errs, l.SetLatency(f.Latency, f.Jitter))
			}
		}
		sleep(ctx, between(rng, f.DurMin, f.DurMax))
		for i, v := range victims {
			for _, l := range env.Cluster.Links(v) {
				errs = append(errs, l.SetLatency(0, 0))
			}
			env.end(ids[i], "latency", nodeName(v))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// SplitQuorum partitions the workers into two groups that see different
// majorities sharing one node, for the whole run: with 5 nodes, even
// workers reach n0, n1, n2 and odd workers reach n2, n3, n4. Every lock is
// then held on exactly a bare majority, which includes the shared node, so
// a fault on that node alone (a restart without data, a clock jump) can let
// the other group take the lock while it is held.
type SplitQuorum struct {
	id int64 // the split's fault id in the history
}

// Name describes the fault.
func (*SplitQuorum) Name() string { return "split quorum: even workers see n0-n2, odd workers n2-n4" }

// Shared returns the node both groups reach in a cluster of n nodes.
func (*SplitQuorum) Shared(n int) int { return n / 2 }

// cut lists the nodes worker w must not reach in a cluster of n nodes.
func (f *SplitQuorum) cut(w, n int) []int {
	var out []int
	for v := range n {
		if (w%2 == 0 && v > f.Shared(n)) || (w%2 == 1 && v < f.Shared(n)) {
			out = append(out, v)
		}
	}
	return out
}

// Prepare cuts the links before the workers start.
func (f *SplitQuorum) Prepare(_ context.Context, env *Env) error {
	n := env.Cluster.Nodes()
	var targets []string
	for w := range env.Cluster.Workers() {
		var cut []string
		for _, v := range f.cut(w, n) {
			env.Cluster.Link(w, v).Cut()
			cut = append(cut, nodeName(v))
		}
		targets = append(targets, fmt.Sprintf("worker-%d/%s", w, strings.Join(cut, ",")))
	}
	f.id = env.start("split", "workers", strings.Join(targets, " "))
	return nil
}

// Run waits for ctx to end and heals the links.
func (f *SplitQuorum) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	<-ctx.Done()
	n := env.Cluster.Nodes()
	var errs []error
	for w := range env.Cluster.Workers() {
		for _, v := range f.cut(w, n) {
			errs = append(errs, env.Cluster.Link(w, v).Heal())
		}
	}
	env.end(f.id, "split", "workers")
	return errors.Join(errs...)
}

package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redlock-go/redlock/torture/cluster"
)

// AsymmetricPartition cuts each worker off from its own random minority of
// the nodes, all at the same time, for a while, and heals, over and over.
// The workers then disagree about which nodes are reachable, so each builds
// its majorities from different nodes, as in a partial partition where
// some paths between clients and servers break and others do not.
type AsymmetricPartition struct {
	// Hold blackholes the links (requests time out) instead of cutting
	// them (requests are refused at once).
	Hold bool
	// DurMin and DurMax bound how long a partition lasts.
	DurMin, DurMax time.Duration
	// GapMin and GapMax bound the time between partitions.
	GapMin, GapMax time.Duration
}

// Name describes the fault.
func (f AsymmetricPartition) Name() string {
	how := "cut"
	if f.Hold {
		how = "blackhole"
	}
	return fmt.Sprintf("%s each worker from its own minority for %v-%v", how, f.DurMin, f.DurMax)
}

// Run implements Fault.
func (f AsymmetricPartition) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	var dir cluster.Direction
	if f.Hold {
		dir = cluster.Both
	}
	for sleep(ctx, between(rng, f.GapMin, f.GapMax)) {
		cut := f.choose(env, rng)
		targets := make([]string, len(cut))
		for w, links := range cut {
			targets[w] = linkNames(w, links)
		}
		id := env.start("asymmetric", "workers", strings.Join(targets, " "))
		var errs []error
		for _, links := range cut {
			errs = append(errs, breakLinks(links, dir))
		}
		sleep(ctx, between(rng, f.DurMin, f.DurMax))
		for _, links := range cut {
			errs = append(errs, healLinks(links))
		}
		env.end(id, "asymmetric", "workers")
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// choose picks, for each worker, the links to its own random minority of
// the nodes.
func (f AsymmetricPartition) choose(env *Env, rng *rand.Rand) [][]*cluster.Link {
	n := env.Cluster.Nodes()
	cut := make([][]*cluster.Link, env.Cluster.Workers())
	for w := range cut {
		for _, v := range pick(rng, n, 1+rng.IntN(n/2)) {
			cut[w] = append(cut[w], env.Cluster.Link(w, v))
		}
	}
	return cut
}

// linkNames names worker w's links for the history: "worker-0/n1,n3".
func linkNames(w int, links []*cluster.Link) string {
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = nodeName(l.Node())
	}
	return fmt.Sprintf("worker-%d/%s", w, strings.Join(names, ","))
}

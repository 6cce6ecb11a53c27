package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redlock-go/redlock/torture/cluster"
)

// OneWayPartition drops the traffic one way only between every worker and
// a random minority of the nodes for a while, and heals, over and over.
// Each round drops requests or replies, at random: dropped requests never
// reach the node; dropped replies let the node carry out a request (grant
// the lock, extend or release it) that the worker never hears of, as when
// a firewall rule or a routing change breaks one direction of a path.
type OneWayPartition struct {
	// DurMin and DurMax bound how long a partition lasts.
	DurMin, DurMax time.Duration
	// GapMin and GapMax bound the time between partitions.
	GapMin, GapMax time.Duration
}

// Name describes the fault.
func (f OneWayPartition) Name() string {
	return fmt.Sprintf("drop requests or replies of a minority for %v-%v", f.DurMin, f.DurMax)
}

// Run implements Fault.
func (f OneWayPartition) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	n := env.Cluster.Nodes()
	for sleep(ctx, between(rng, f.GapMin, f.GapMax)) {
		dir := cluster.Requests
		if rng.IntN(2) == 1 {
			dir = cluster.Replies
		}
		victims := pick(rng, n, 1+rng.IntN(n/2))
		ids := make([]int64, len(victims))
		var errs []error
		for i, v := range victims {
			ids[i] = env.start("one-way", nodeName(v), "drop "+dir.String()+" of all workers")
			errs = append(errs, breakLinks(env.Cluster.Links(v), dir))
		}
		sleep(ctx, between(rng, f.DurMin, f.DurMax))
		for i, v := range victims {
			errs = append(errs, healLinks(env.Cluster.Links(v)))
			env.end(ids[i], "one-way", nodeName(v))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

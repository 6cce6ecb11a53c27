package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redlock-go/redlock/torture/cluster"
)

// Flap blackholes one node, chosen at random for the whole run, from every
// worker for a short while, heals it for a short while, and does it again
// until the run ends, like a node behind a failing switch port: requests
// to it time out, then it answers again, over and over.
type Flap struct {
	// DurMin and DurMax bound how long each blackhole lasts.
	DurMin, DurMax time.Duration
	// GapMin and GapMax bound the time between two blackholes.
	GapMin, GapMax time.Duration
}

// Name describes the fault.
func (f Flap) Name() string {
	return fmt.Sprintf("blackhole one node for %v-%v every %v-%v", f.DurMin, f.DurMax, f.GapMin, f.GapMax)
}

// Run implements Fault.
func (f Flap) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	v := rng.IntN(env.Cluster.Nodes())
	links := env.Cluster.Links(v)
	for sleep(ctx, between(rng, f.GapMin, f.GapMax)) {
		id := env.start("flap", nodeName(v), "blackhole from all workers")
		err := breakLinks(links, cluster.Both)
		sleep(ctx, between(rng, f.DurMin, f.DurMax))
		err = errors.Join(err, healLinks(links))
		env.end(id, "flap", nodeName(v))
		if err != nil {
			return err
		}
	}
	return nil
}

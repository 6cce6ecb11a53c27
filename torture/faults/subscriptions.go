package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// KindDropSubscriptions is the kind DropSubscriptions records
// (history.Fault.Kind).
const KindDropSubscriptions = "drop-subscriptions"

// DropSubscriptions closes every subscription connection of every node at
// once (CLIENT KILL TYPE pubsub), Every: a release announced before the
// clients subscribe again goes unheard, and their waiters must still be
// served in turn, not sleep out their retry pauses with the lock free.
type DropSubscriptions struct {
	// Every is the time between two drops, and before the first.
	Every time.Duration
}

// Name describes the fault.
func (f DropSubscriptions) Name() string {
	return fmt.Sprintf("CLIENT KILL TYPE pubsub on every node every %v", f.Every)
}

// Run implements Fault.
func (f DropSubscriptions) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	var errs []error
	for sleep(ctx, f.Every) {
		env.instant(KindDropSubscriptions, "all nodes", "CLIENT KILL TYPE pubsub")
		for i := range env.Cluster.Nodes() {
			if _, err := env.Cluster.Node(i).Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub"); err != nil && ctx.Err() == nil {
				errs = append(errs, fmt.Errorf("node %d: CLIENT KILL TYPE pubsub: %w", i, err))
			}
		}
	}
	return errors.Join(errs...)
}

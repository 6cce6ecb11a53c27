package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redlock-go/redlock/torture/history"
)

// errNoShim is returned by clock faults run without the clock shim.
var errNoShim = errors.New("faults: clock fault without the clock shim (Env.Clock is nil)")

// ClockJumpOnGrant moves one node's wall clock forward by Jump right after a
// lock is granted. Redis expires keys by its wall clock, so the holder's key
// on that node expires at once although the holder's validity runs on.
type ClockJumpOnGrant struct {
	// Node is the node whose clock jumps.
	Node int
	// Jump is how far it jumps each time; it should exceed the TTL.
	Jump time.Duration
	// Cooldown is the least time between two jumps.
	Cooldown time.Duration
}

// Name describes the fault.
func (f ClockJumpOnGrant) Name() string {
	return fmt.Sprintf("n%d's clock jumps +%v right after a grant", f.Node, f.Jump)
}

// Run implements Fault.
func (f ClockJumpOnGrant) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	if env.Clock == nil {
		return errNoShim
	}
	grants, cancel := env.grants()
	defer cancel()
	var last time.Time
	for {
		var ev history.Event
		select {
		case <-ctx.Done():
			return nil
		case ev = <-grants:
		}
		if time.Since(last) < f.Cooldown {
			continue
		}
		last = time.Now()
		if err := env.Clock.Jump(env.Cluster.Node(f.Node), f.Jump); err != nil {
			return err
		}
		env.instant("clock-jump", nodeName(f.Node), fmt.Sprintf("+%v while %s holds the lock", f.Jump, ev.Process))
	}
}

// ClockSkew makes every node's clock run PPM parts per million fast for the
// whole run. Within the client's drift allowance (DriftFactor, 1% by
// default, so 10000 ppm) the lock stays safe; beyond it a key can expire on
// the nodes before the holder's validity ends.
type ClockSkew struct {
	PPM int64
}

// Name describes the fault.
func (f ClockSkew) Name() string {
	return fmt.Sprintf("every node's clock runs %.2f%% fast", float64(f.PPM)/1e4)
}

// Prepare sets the skew before the workers start.
func (f ClockSkew) Prepare(ctx context.Context, env *Env) error {
	if env.Clock == nil {
		return errNoShim
	}
	for v := range env.Cluster.Nodes() {
		if err := env.Clock.Skew(env.Cluster.Node(v), f.PPM); err != nil {
			return err
		}
	}
	return nil
}

// Run records the skew as a fault and removes it when ctx ends.
func (f ClockSkew) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	id := env.start("clock-skew", "all nodes", fmt.Sprintf("%+d ppm", f.PPM))
	<-ctx.Done()
	var errs []error
	for v := range env.Cluster.Nodes() {
		errs = append(errs, env.Clock.Skew(env.Cluster.Node(v), 0))
	}
	env.end(id, "clock-skew", "all nodes")
	return errors.Join(errs...)
}

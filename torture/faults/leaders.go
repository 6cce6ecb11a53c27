package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// KindKillLeader is the kind of the record of a KillLeadersAtRead kill.
const KindKillLeader = "kill-leader"

// KillLeadersAtRead kills with SIGKILL whichever worker the register
// serves a read, inside its critical section (in an election, while it
// leads), up to Kills workers, one at a time and at least Cooldown apart:
// each dies holding the lock, which the others get once it expires. The
// survivors live through one such death after another, so that a waiter
// that learnt of one expiry must still learn of the next.
type KillLeadersAtRead struct {
	// Kills is how many workers to kill; keep at least one alive.
	Kills int
	// Cooldown is the least time from one kill to the next.
	Cooldown time.Duration
}

// Name describes the fault.
func (f KillLeadersAtRead) Name() string {
	return fmt.Sprintf("SIGKILL the worker at its read, %d workers, %v apart", f.Kills, f.Cooldown)
}

// Run implements Fault.
func (f KillLeadersAtRead) Run(ctx context.Context, env *Env, _ *rand.Rand) error {
	if f.Kills >= len(env.Workers) {
		return fmt.Errorf("faults: %d kills of %d workers leave nobody to lead", f.Kills, len(env.Workers))
	}
	killed := map[string]bool{}
	return atReads(ctx, env, f.Cooldown, func(name string) (func() error, error) {
		if len(killed) == f.Kills || killed[name] {
			return nil, nil
		}
		for _, w := range env.Workers {
			if w.Name() != name {
				continue
			}
			killed[name] = true
			err := w.Kill()
			env.instant(KindKillLeader, name, "SIGKILL at its read")
			return func() error { return nil }, err
		}
		return nil, nil
	})
}

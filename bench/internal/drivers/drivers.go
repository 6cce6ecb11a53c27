// Package drivers gives every lock library measured by the benchmark the same
// two calls: take a lock, blocking until it is held, and release it. A
// semaphore's permit and a read-write lock's reader are taken by
// AcquirePermit and AcquireShared: natively with this project's library,
// with the nearest substitute for the others.
package drivers

import (
	"context"
	"fmt"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/redlock-go/redlock"
)

// TTL is the lock time-to-live every library is given.
const TTL = 10 * time.Second

// Driver takes and releases locks with one library over a fixed set of nodes.
// It is safe for concurrent use.
type Driver interface {
	// Acquire blocks until the lock named key is held, retrying while it is
	// taken, or until ctx ends. held is what Release needs.
	Acquire(ctx context.Context, key string) (held any, err error)
	// Release releases a lock returned by Acquire.
	Release(ctx context.Context, held any) error
	// Close closes the library's connections.
	Close()
}

// Library describes one lock library and how to open a Driver for it.
type Library struct {
	// Name identifies the library in results, e.g. "redsync".
	Name string
	// Ours marks this project's library.
	Ours bool
	// Baseline marks the reference that is not a lock (see
	// baselineLibrary): it is no peer, and runs only where keys are not
	// contended.
	Baseline bool
	// Floor marks the fenced floor (see floorLibrary): the least work of a
	// fenced lock, no peer, run only in the one-goroutine cases of a plain
	// lock.
	Floor bool
	// Trade, when set, names the guarantee that this configuration of this
	// project's library gives up for speed (an option that is off by
	// default): it is reported beside the others, to show what the
	// guarantee costs, and neither judged by the targets nor a peer.
	Trade string
	// TradeOf names the configuration with every guarantee on that a Trade
	// configuration departs from, to set them side by side.
	TradeOf string
	// MaxNodes is the largest node count the library can lock over; 0 means
	// any. Cases with more nodes are reported as not applicable.
	MaxNodes int
	// Settings states the configuration used, for the report.
	Settings string
	// Semaphore and ReadWrite say how the library takes a permit of a
	// semaphore (AcquirePermit) and a read-write lock (AcquireShared):
	// natively, or by the nearest substitute; empty for the baseline.
	Semaphore, ReadWrite string
	// Open connects to the nodes at addrs. contended says whether lockers
	// will compete for keys, for libraries whose retry settings cost
	// per-call allocations that an uncontended caller would not make.
	Open func(ctx context.Context, addrs []string, contended bool) (Driver, error)
}

// All returns every library, this project's adapters first and the
// baseline last.
func All() []Library {
	return []Library{
		redlockGoredis(),
		redlockRueidis(),
		redlockRueidisNoQuarantine(),
		redsyncLibrary(),
		rueidislockLibrary(),
		bsmLibrary(),
		floorLibrary(),
		baselineLibrary(),
	}
}

// retry is this project's default retry strategy (redlock.Options.Retry):
// exponential from 10 ms to 200 ms with jitter.
var retry = redlock.ExponentialJitter(10*time.Millisecond, 200*time.Millisecond)

// retryDelay is the pause before retry number n (1 for the first retry),
// shared by every library that lets the caller choose: this project's
// default.
func retryDelay(n int) time.Duration {
	d, _ := retry.NextDelay(n + 1)
	return d
}

// rueidisClients opens one rueidis client per node, as this library's
// rueidis adapter is measured with: no client-side cache, no cluster
// discovery.
func rueidisClients(addrs []string) ([]rueidisclient.Client, error) {
	clients := make([]rueidisclient.Client, 0, len(addrs))
	for _, a := range addrs {
		c, err := rueidisclient.NewClient(rueidisclient.ClientOption{
			InitAddress:       []string{a},
			DisableCache:      true,
			ForceSingleClient: true,
		})
		if err != nil {
			for _, c := range clients {
				c.Close()
			}
			return nil, fmt.Errorf("rueidis client for %s: %w", a, err)
		}
		clients = append(clients, c)
	}
	return clients, nil
}

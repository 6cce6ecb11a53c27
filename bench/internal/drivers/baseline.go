package drivers

import (
	"context"
	"fmt"
	"time"

	rueidisclient "github.com/redis/rueidis"
)

// BaselineName names the baseline in results.
const BaselineName = "baseline"

// baselineLibrary is not a lock. It does the least Redis work a Redlock
// cycle needs, with a client that does little else, so that the rates of the
// libraries can be read against what the nodes and one client allow on the
// machine in the same run: the limit set by Redis round trips.
func baselineLibrary() Library {
	return Library{
		Name:     BaselineName,
		Baseline: true,
		Settings: "Not a lock: the least Redis work of a Redlock cycle. `SET key 1 NX PX 10000` to every node at once, " +
			"one goroutine per node per call, returning when a majority granted; then `DEL key` to every node, " +
			"returning when a majority answered. No token, no script, no per-node timeout, no fencing, no clean-up " +
			"of a failed attempt but the DEL. One rueidis client per node (DisableCache, ForceSingleClient). " +
			"Run only where keys are not contended.",
		Open: func(_ context.Context, addrs []string, _ bool) (Driver, error) {
			clients, err := rueidisClients(addrs)
			if err != nil {
				return nil, err
			}
			return &baselineDriver{nodes: clients, quorum: len(addrs)/2 + 1}, nil
		},
	}
}

type baselineDriver struct {
	nodes  []rueidisclient.Client
	quorum int
}

func (d *baselineDriver) Acquire(ctx context.Context, key string) (any, error) {
	err := retryUntil(ctx, func() bool {
		granted := d.fanOut(ctx, func(c rueidisclient.Client) rueidisclient.Completed {
			return c.B().Set().Key(key).Value("1").Nx().Px(TTL).Build()
		})
		if !granted {
			d.Release(ctx, key)
		}
		return granted
	})
	return key, err
}

// retryUntil calls try until it succeeds, pausing as this project's
// default retry does between calls, or until ctx ends.
func retryUntil(ctx context.Context, try func() bool) error {
	for attempt := 1; !try(); attempt++ {
		t := time.NewTimer(retryDelay(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

func (d *baselineDriver) Release(ctx context.Context, held any) error {
	key := held.(string)
	if !d.fanOut(ctx, func(c rueidisclient.Client) rueidisclient.Completed {
		return c.B().Del().Key(key).Build()
	}) {
		return fmt.Errorf("baseline: DEL %s answered by fewer than %d nodes", key, d.quorum)
	}
	return nil
}

// fanOut sends the command build makes to every node, each from a goroutine
// of its own, and reports whether a majority of the nodes succeeded: replied
// without an error (a SET NX that found the key held replies nil, which
// rueidis returns as an error). It returns as soon as that is settled; the
// other requests finish on their own.
func (d *baselineDriver) fanOut(ctx context.Context, build func(rueidisclient.Client) rueidisclient.Completed) bool {
	replies := make(chan bool, len(d.nodes))
	for _, c := range d.nodes {
		go func() { replies <- c.Do(ctx, build(c)).Error() == nil }()
	}
	return d.tally(replies)
}

// tally reads the nodes' replies, true for a success, until a majority
// succeeded or can no longer succeed, and reports whether it did.
func (d *baselineDriver) tally(replies <-chan bool) bool {
	yes, no := 0, 0
	for yes < d.quorum && no <= len(d.nodes)-d.quorum {
		if <-replies {
			yes++
		} else {
			no++
		}
	}
	return yes >= d.quorum
}

func (d *baselineDriver) Close() {
	for _, c := range d.nodes {
		c.Close()
	}
}

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
			"returning when a majority answered, each node's DEL sent once its SET replied. No token, no script, no per-node timeout, no fencing, no clean-up " +
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

// baselineHeld is a lock of the baseline: its key, and the requests that
// took it, which its release waits for node by node.
type baselineHeld struct {
	key   string
	calls calls
}

func (d *baselineDriver) Acquire(ctx context.Context, key string) (any, error) {
	var held baselineHeld
	err := retryUntil(ctx, func() bool {
		var granted bool
		granted, held.calls = d.fanOut(ctx, nil, func(c rueidisclient.Client) bool {
			return c.Do(ctx, c.B().Set().Key(key).Value("1").Nx().Px(TTL).Build()).Error() == nil
		})
		held.key = key
		if !granted {
			d.Release(ctx, held)
		}
		return granted
	})
	return held, err
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
	h := held.(baselineHeld)
	if ok, _ := d.fanOut(ctx, h.calls, func(c rueidisclient.Client) bool {
		return c.Do(ctx, c.B().Del().Key(h.key).Build()).Error() == nil
	}); !ok {
		return fmt.Errorf("baseline: DEL %s answered by fewer than %d nodes", h.key, d.quorum)
	}
	return nil
}

// calls are the requests of one fan-out: the channel at i is closed once
// node i replied.
type calls []chan struct{}

// fanOut calls do with every node's client, each from a goroutine of its
// own, and reports whether a majority of the nodes succeeded (a SET NX that
// found the key held replies nil, which rueidis returns as an error). It
// returns as soon as that is settled; the other requests finish on their
// own, and the calls it returns close as they do. A request to node i is
// sent only once after[i] closed: a release passes the calls of its
// acquisition, so that on every node it comes after them (the goroutines of
// two fan-outs run in no set order, and a release that overtook its
// acquisition would leave the key set on that node for its TTL).
func (d *baselineDriver) fanOut(ctx context.Context, after calls, do func(rueidisclient.Client) bool) (bool, calls) {
	replies := make(chan bool, len(d.nodes))
	done := make(calls, len(d.nodes))
	for i, c := range d.nodes {
		done[i] = make(chan struct{})
		go func() {
			defer close(done[i])
			if after != nil {
				<-after[i]
			}
			replies <- do(c)
		}()
	}
	return d.tally(replies), done
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

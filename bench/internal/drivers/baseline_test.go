package drivers

import (
	"context"
	"testing"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/redlock-go/redlock/bench/internal/nodes"
)

// TestFanOut_releaseFollowsItsAcquisition takes and releases one key many
// times with the baseline and the fenced floor, which return at a majority
// and leave the other requests in flight, and checks after each cycle that
// no node keeps the key: a release that overtook its acquisition on a node
// would leave it set there for its TTL, and a later attempt refused.
func TestFanOut_releaseFollowsItsAcquisition(t *testing.T) {
	ctx := context.Background()
	set, err := nodes.Start(ctx, "redis-server", 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	probes, err := rueidisClients(set.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range probes {
			c.Close()
		}
	})
	for _, lib := range []Library{baselineLibrary(), floorLibrary()} {
		t.Run(lib.Name, func(t *testing.T) {
			d, err := lib.Open(ctx, set.Addrs(), false)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			key := "fanout:" + lib.Name
			for i := range 3000 {
				held, err := d.Acquire(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Release(ctx, held); err != nil {
					t.Fatal(err)
				}
				awaitGone(t, probes, key, i)
			}
		})
	}
}

// awaitGone waits until no node holds key, as every request of a released
// cycle has landed within a second; it fails the test if one still does.
func awaitGone(t *testing.T, probes []rueidisclient.Client, key string, cycle int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for i, c := range probes {
		for {
			n, err := c.Do(context.Background(), c.B().Exists().Key(key).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cycle %d: node %d still holds %s a second after its release", cycle, i, key)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

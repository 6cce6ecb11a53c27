package delayproxy_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/internal/delayproxy"
	"github.com/redlock-go/redlock/bench/internal/nodes"
)

func TestMain(m *testing.M) {
	delayproxy.RunIfChild() // the proxies run as a copy of the test binary
	os.Exit(m.Run())
}

// TestStart_delaysEachWay checks that a request through a proxy waits for
// the delay once each way when BothWays is set, and once otherwise, on
// every proxy of the child.
func TestStart_delaysEachWay(t *testing.T) {
	const delay = 2 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers, err := nodes.Start(ctx, "redis-server", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer servers.Close()
	for _, both := range []bool{false, true} {
		p, err := delayproxy.Start(ctx, delayproxy.Spec{Upstreams: servers.Addrs(), Delay: delay, BothWays: both})
		if err != nil {
			t.Fatal(err)
		}
		want := delay
		if both {
			want = 2 * delay
		}
		for i, addr := range p.Addrs() {
			times, err := nodes.RoundTrips(ctx, addr, 20)
			if err != nil {
				t.Fatal(err)
			}
			if m := slices.Min(times); m < want {
				t.Errorf("both ways %v, proxy %d: fastest PING %v, want at least %v", both, i, m, want)
			}
		}
		p.Close()
	}
}

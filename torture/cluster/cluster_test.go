package cluster_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/torture/cluster"
)

// ping sends PING to addr over a fresh connection within timeout.
func ping(t *testing.T, url string, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	o, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	o.PoolSize = 1
	c := goredisv9.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	begin := time.Now()
	err = c.Ping(ctx).Err()
	return time.Since(begin), err
}

// TestLink_cutHoldLatencyHeal checks that a link passes PING, refuses
// connections when cut, leaving other links alone, stalls them when held,
// delays them by its latency, and is back to normal after each Heal.
func TestLink_cutHoldLatencyHeal(t *testing.T) {
	t.Parallel()
	c, err := cluster.New(t.Context(), cluster.Options{Nodes: 2, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Nodes() != 2 || c.Workers() != 2 || len(c.WorkerURLs(1)) != 2 || len(c.DirectURLs()) != 2 {
		t.Fatalf("Nodes() = %d, Workers() = %d, WorkerURLs = %v", c.Nodes(), c.Workers(), c.WorkerURLs(1))
	}
	l := c.Link(0, 1)
	url := c.WorkerURLs(0)[1]
	if _, err := ping(t, url, time.Second); err != nil {
		t.Fatalf("PING through the proxy: %v", err)
	}
	checkCut(t, l, url, c.WorkerURLs(1)[1])
	checkHold(t, l, url)
	checkLatency(t, l, url)
}

// checkCut cuts l, whose proxy listens at url, and checks that PING is
// refused there but not at other, the same node through another worker's
// link, and passes again after Heal.
func checkCut(t *testing.T, l *cluster.Link, url, other string) {
	t.Helper()
	l.Cut()
	if _, err := ping(t, url, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("PING over a cut link: err = %v, want connection refused", err)
	}
	// Other links are untouched.
	if _, err := ping(t, other, time.Second); err != nil {
		t.Fatalf("PING from the other worker: %v", err)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if _, err := ping(t, url, time.Second); err != nil {
		t.Fatalf("PING after Heal: %v", err)
	}
}

// checkHold holds l, whose proxy listens at url, checks that PING times out
// there, and heals l.
func checkHold(t *testing.T, l *cluster.Link, url string) {
	t.Helper()
	if err := l.Hold(); err != nil {
		t.Fatal(err)
	}
	var netErr net.Error
	if _, err := ping(t, url, 200*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &netErr) && netErr.Timeout()) {
		t.Fatalf("PING over a held link: err = %v, want a timeout", err)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
}

// checkLatency gives l, whose proxy listens at url, 50 ms of latency each
// way and checks that PING takes at least their sum, then removes it and
// checks that PING is quick again.
func checkLatency(t *testing.T, l *cluster.Link, url string) {
	t.Helper()
	if err := l.SetLatency(50*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	took, err := ping(t, url, 2*time.Second)
	if err != nil || took < 100*time.Millisecond {
		t.Fatalf("PING with 50 ms each way took %v, %v; want at least 100 ms", took, err)
	}
	if err := l.SetLatency(0, 0); err != nil {
		t.Fatal(err)
	}
	if took, err := ping(t, url, time.Second); err != nil || took > 90*time.Millisecond {
		t.Fatalf("PING after removing the latency took %v, %v", took, err)
	}
}

// A link that drops only replies lets a write take effect on the node while
// the worker times out; one that drops only requests keeps it off the node.
// The worker's connection is open before the drop, as a pooled one is.
func TestLink_dropOneWay(t *testing.T) {
	t.Parallel()
	c, err := cluster.New(t.Context(), cluster.Options{Nodes: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := c.Link(0, 0)
	direct := client(t, c.DirectURLs()[0])
	defer direct.Close()
	for _, tc := range []struct {
		dir    cluster.Direction
		landed bool
	}{{cluster.Replies, true}, {cluster.Requests, false}} {
		key := "k-" + tc.dir.String()
		if err := setThrough(t, c.WorkerURLs(0)[0], l, tc.dir, key); err == nil {
			t.Fatalf("SET with %s dropped succeeded", tc.dir)
		}
		if err := l.Heal(); err != nil {
			t.Fatal(err)
		}
		n, err := direct.Exists(t.Context(), key).Result()
		if err != nil || (n == 1) != tc.landed {
			t.Fatalf("with %s dropped: EXISTS %s = %d, %v; want landed = %v", tc.dir, key, n, err, tc.landed)
		}
		if _, err := ping(t, c.WorkerURLs(0)[0], time.Second); err != nil {
			t.Fatalf("PING after Heal: %v", err)
		}
	}
}

// setThrough opens a connection to url, drops dir on l and runs SET key 1
// on that connection, giving up after 200 ms.
func setThrough(t *testing.T, url string, l *cluster.Link, dir cluster.Direction, key string) error {
	t.Helper()
	c := client(t, url)
	defer c.Close()
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Drop(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	return c.Set(ctx, key, "1", 0).Err()
}

// client returns a go-redis client of one connection to url.
func client(t *testing.T, url string) *goredisv9.Client {
	t.Helper()
	o, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	o.PoolSize = 1
	return goredisv9.NewClient(o)
}

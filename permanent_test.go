package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// A majority of nodes that refuse for a reason no retry fixes (here the
// fencing counter is a list, WRONGTYPE) ends Acquire at once, naming the
// node and the cause, instead of retrying until the context ends. A
// minority of them is tolerated like a minority that is down.
func TestAcquire_permanentErrorsFailFast(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		do(t, cluster.Node(0), "RPUSH", redlock.FenceKey("broken"), "not a counter")
		lock, err := c.Acquire(bg, "broken")
		if err != nil {
			t.Fatalf("one node of three refusing: %v", err)
		}
		lock.Release(bg)

		do(t, cluster.Node(1), "DEL", redlock.FenceKey("broken"))
		do(t, cluster.Node(1), "RPUSH", redlock.FenceKey("broken"), "not a counter")
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		_, err = c.Acquire(ctx, "broken")
		if !errors.Is(err, redlock.ErrInvalidOptions) || !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("two nodes of three refusing: %v, want ErrNotAcquired and ErrInvalidOptions", err)
		}
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire retried until its context ended: %v", err)
		}
		_, err = c.TryAcquire(bg, "broken")
		if !errors.Is(err, redlock.ErrInvalidOptions) {
			t.Fatalf("TryAcquire: %v, want ErrInvalidOptions", err)
		}
	})
}

// A fencing counter that no INCR can raise (2^63 - 1, and past it) or
// that is negative fails Acquire at once, as one that is no number does,
// saying what a counter must be. Before, the largest ones met INCR's
// overflow error, which was retried until the context ended.
func TestAcquire_counterOutOfRangeFailsFast(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	c := newClient(t, cluster, adapters[0], fast())
	for _, counter := range []string{"9223372036854775807", "18446744073709551615", "10000000000000000000", "-5"} {
		for _, n := range cluster.Nodes() {
			do(t, n, "SET", redlock.FenceKey("huge"), counter)
		}
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		_, err := c.Acquire(ctx, "huge")
		cancel()
		if !errors.Is(err, redlock.ErrInvalidOptions) || !strings.Contains(err.Error(), "below 2^63 - 1") {
			t.Errorf("counter %s: %v, want ErrInvalidOptions saying what a counter is", counter, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("counter %s: Acquire retried until its context ended", counter)
		}
	}
}

// A counter INCR can still raise, however large, is raised: the library
// refuses only the counters it cannot raise.
func TestAcquire_largestCounterIsRaised(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], fast())
	do(t, cluster.Node(0), "SET", redlock.FenceKey("large"), "9223372036854775806")
	lock, err := c.TryAcquire(bg, "large")
	if err != nil {
		t.Fatalf("counter 2^63 - 2: %v", err)
	}
	if lock.Fence() != 1<<63-1 {
		t.Errorf("fencing token %d, want 2^63 - 1", lock.Fence())
	}
	lock.Release(bg)
}

// An ACL that denies the library's keys (NOPERM) on every node fails fast.
func TestAcquire_noPermissionFailsFast(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	do(t, cluster.Node(0), "ACL", "SETUSER", "jobs", "on", ">pw", "~jobs:*", "&*", "+@all")
	conn, err := goredis.NewURL("redis://jobs:pw@" + cluster.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := redlock.New([]redlock.Conn{conn}, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, DisableQuarantine: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	_, err = c.Acquire(ctx, "other")
	if !errors.Is(err, redlock.ErrInvalidOptions) || ctx.Err() != nil {
		t.Fatalf("acquire of a key the ACL denies: %v, want ErrInvalidOptions at once", err)
	}
}

// A node that needs a password its URL does not give refuses a lock
// request, longer than the commands Redis takes from a connection that has
// not authenticated, with a protocol error: the node's outcome says NOAUTH
// all the same, with either adapter, and so many such nodes that no quorum
// is possible end Acquire at once.
func TestAcquire_missingPasswordSaysNOAUTH(t *testing.T) {
	for _, a := range []struct {
		name    string
		newConn func(string) (redlock.Conn, error)
	}{
		{"goredis", func(u string) (redlock.Conn, error) { return goredis.NewURL(u) }},
		{"rueidis", func(u string) (redlock.Conn, error) { return rueidis.NewURL(u) }},
	} {
		newConn := a.newConn
		t.Run(a.name, func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
			do(t, cluster.Node(0), "CONFIG", "SET", "requirepass", "s3cret-pw")
			c := clientOverURLs(t, cluster.URLs(), newConn)
			t.Run("minority", func(t *testing.T) { nodeSaysNOAUTH(t, c, cluster.Node(0).Addr()) })

			do(t, cluster.Node(1), "CONFIG", "SET", "requirepass", "s3cret-pw")
			c = clientOverURLs(t, cluster.URLs(), newConn)
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			_, err := c.Acquire(ctx, "needs-auth")
			if !errors.Is(err, redlock.ErrInvalidOptions) || !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil {
				t.Fatalf("two nodes of three without their password: %v, want ErrNotAcquired and ErrInvalidOptions at once", err)
			}
			for _, r := range quorumError(t, err).Nodes[:2] {
				if r.Outcome != redlock.OutcomeError || !strings.HasPrefix(r.Err.Error(), "NOAUTH") {
					t.Errorf("%s: %v %v, want a NOAUTH error", r.Node, r.Outcome, r.Err)
				}
			}
		})
	}
}

// nodeSaysNOAUTH acquires and releases a lock through c until the node
// named bad, which wants a password, has answered an acquisition within
// it (the lock is granted at a quorum, possibly before), and checks that
// its error says NOAUTH.
func nodeSaysNOAUTH(t *testing.T, c *redlock.Client, bad string) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		lock, err := c.TryAcquire(bg, "needs-auth")
		if err != nil {
			t.Fatalf("acquire with one node of three without its password: %v", err)
		}
		r := lock.Nodes()[0]
		lock.Release(bg)
		if r.Node != bad {
			t.Fatalf("node 0 is %s, want %s", r.Node, bad)
		}
		if r.Outcome != redlock.OutcomeNoAnswer {
			if r.Outcome != redlock.OutcomeError || !strings.HasPrefix(r.Err.Error(), "NOAUTH") {
				t.Errorf("%s: %v %v, want a NOAUTH error", r.Node, r.Outcome, r.Err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered an acquisition in time", bad)
		}
	}
}

// clientOverURLs returns a Client over a Conn per URL, each from newConn,
// closed at the end of the test. It asks nothing of the nodes first, unlike
// Dial, and has no restart quarantine: the nodes are not marked ready.
func clientOverURLs(t *testing.T, urls []string, newConn func(string) (redlock.Conn, error)) *redlock.Client {
	t.Helper()
	conns := make([]redlock.Conn, len(urls))
	for i, u := range urls {
		var err error
		if conns[i], err = newConn(u); err != nil {
			t.Fatal(err)
		}
	}
	opts := fast()
	opts.DisableQuarantine = true
	c, err := redlock.New(conns, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
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

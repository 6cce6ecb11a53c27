package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A lock won while the client's other requests keep the nodes busy
// reaches every node, even when its caller's context ends as soon as
// Acquire returns (a deferred cancel): the request to a node that had not
// answered yet, still queued behind another request to it, is sent all
// the same. Before, it was dropped, as nobody waited for it any more, and
// about one lock in fifteen rested on a bare majority: one more node down,
// and it was lost.
//
// A request still queued at its per-node deadline is dropped by design (a
// reply that late would not count), and a loaded machine can hold one back
// past the default 50 ms: the per-node timeout here is a second, so that
// only the end of the caller's context could drop it.
func TestAcquire_wonLockReachesEveryNodeAfterItsContextEnds(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	forEachAdapter(t, func(t *testing.T, a adapter) {
		client := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: time.Second})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if l, err := client.TryAcquire(bg, fmt.Sprintf("busy:%s:%d:%d", a.name, g, i)); err == nil {
						l.Release(bg)
					}
				}
			})
		}
		defer func() { close(stop); wg.Wait() }()
		for i := range 100 {
			key := fmt.Sprintf("won:%s:%d", a.name, i)
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			lock, err := client.Acquire(ctx, key)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			logged := false
			eventually(t, key+" held on every node", func() bool {
				for _, n := range cluster.Nodes() {
					if got := keyOn(t, n, key); got != lock.Token() {
						if !logged {
							t.Logf("%s on %s: %q, want %q", key, n.Addr(), got, lock.Token())
							logged = true
						}
						return false
					}
				}
				return true
			})
			if err := lock.Release(bg); err != nil {
				t.Fatal(err)
			}
		}
	})
}

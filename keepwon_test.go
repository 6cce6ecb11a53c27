package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/redlocktest"
)

// A lock won while the client's other requests keep the nodes busy
// reaches every node, even when its caller's context ends as soon as
// Acquire returns (a deferred cancel): the request to a node that had not
// answered yet, still queued behind another request to it, is sent all
// the same. Before, it was dropped, as nobody waited for it any more, and
// about one lock in fifteen rested on a bare majority: one more node down,
// and it was lost.
func TestAcquire_wonLockReachesEveryNodeAfterItsContextEnds(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	forEachAdapter(t, func(t *testing.T, a adapter) {
		client := newClient(t, cluster, a, nil)
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
			eventually(t, key+" held on every node", func() bool {
				for _, n := range cluster.Nodes() {
					if keyOn(t, n, key) != lock.Token() {
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

package redlock_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A node list of a Redis Cluster and plain servers: each plain server
// keeps its one restart marker, as 'redlock init' of those servers alone
// wrote it, and the cluster one per slot. Plain servers marked ready are
// ready to a client of the whole list, for keys of every slot, and gain no
// marker per slot.
func TestRedisCluster_besidePlainServersKeepsTheirOneMarker(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	plain := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond}
			servers, err := redlock.New(adapters[0].conns(t, plain.Addrs()), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer servers.Close()
			if err := servers.MarkReady(bg, true); err != nil {
				t.Fatal(err)
			}
			clusterOnly := clusterClient(t, cluster, a.conn, opts) // marks the cluster ready
			clusterOnly.Close()
			conns := append([]redlock.Conn{a.conn(t, cluster.Addrs())}, adapters[0].conns(t, plain.Addrs())...)
			c, err := redlock.New(conns, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i := range 20 {
				key := a.name + "-mixed-" + strconv.Itoa(i) // of many slots
				lock, err := c.TryAcquire(bg, key)
				if err != nil {
					t.Fatalf("%s: %v, want granted by ready nodes", key, err)
				}
				if err := lock.Release(bg); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range plain.Nodes() {
				keys := do(t, n, "KEYS", "redlock:marker*")
				if keys != "redlock:marker" {
					t.Errorf("%s: markers %q, want its one marker", n.Addr(), keys)
				}
			}
		})
	}
}

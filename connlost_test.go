package redlock_test

import (
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A server that closed the client's idle connections (CLIENT KILL, its
// idle timeout) costs the next request nothing: the adapter sends it again
// on a new connection, as every request of a lock may run twice. Before,
// the rueidis adapter reported EOF on every node, the release failed, and
// the lock stayed held for its TTL.
func TestConn_closedByTheServerIsSentAgain(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, &redlock.Options{TTL: 20 * time.Second})
		lock := take(t, c, "killed")
		for _, n := range cluster.Nodes() {
			do(t, n, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
		}
		if err := lock.Release(bg); err != nil {
			t.Fatalf("Release after the server closed the connections: %v", err)
		}
		for _, n := range cluster.Nodes() {
			do(t, n, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
		}
		again, err := c.TryAcquire(bg, "killed")
		if err != nil {
			t.Fatalf("TryAcquire after the server closed the connections: %v", err)
		}
		if err := again.Release(bg); err != nil {
			t.Fatal(err)
		}
	})
}

package redlock_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// One server given to New under two names (localhost and 127.0.0.1) votes
// once: before a node's first request the Client reads its server's
// run_id, and leaves out for good an entry whose server an earlier entry
// reaches, with an error wrapping ErrDuplicateNode that the Logger is
// told. Before, with the third node paused, that one server granted the
// lock by itself, as two votes of three.
func TestNew_oneServerUnderTwoNamesVotesOnce(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	port := strconv.Itoa(cluster.Node(0).Port())
	addrs := []string{"localhost:" + port, "127.0.0.1:" + port, cluster.Node(1).Addr()}
	forEachAdapter(t, func(t *testing.T, a adapter) {
		log := &records{}
		opts := &redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second, Logger: slog.New(log)}
		client, err := redlock.New(a.conns(t, addrs), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()

		key := "sameserver:" + a.name
		lock, err := client.TryAcquire(bg, key)
		if err != nil {
			t.Fatalf("TryAcquire with two servers of three entries up: %v", err)
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		// The lock was granted at a quorum: the entry left out may answer
		// after it.
		eventually(t, "the Logger is told of the entry left out, naming both", func() bool {
			text := log.text()
			return strings.Contains(text, "another entry of the node list reaches its server") &&
				strings.Contains(text, "localhost:"+port) && strings.Contains(text, "127.0.0.1:"+port)
		})

		if err := cluster.Node(1).Pause(); err != nil {
			t.Fatal(err)
		}
		defer cluster.Node(1).Resume()
		lock, err = client.TryAcquire(bg, key)
		if err == nil {
			lock.Release(bg)
			t.Fatalf("TryAcquire granted by one server listed twice, the third node paused: %+v", lock.Nodes())
		}
		if !duplicateIn(err) {
			t.Errorf("TryAcquire = %v, want a node's error wrapping ErrDuplicateNode", err)
		}
		if err := cluster.Node(1).Resume(); err != nil {
			t.Fatal(err)
		}
	})
}

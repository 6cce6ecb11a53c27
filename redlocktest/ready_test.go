package redlocktest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// New nodes are ready to vote: the first TryAcquire of a client over them
// succeeds, on independent nodes and on a Redis Cluster, every slot of
// which is marked. With Options.Unmarked they are a new deployment's, and
// the restart quarantine keeps them from voting until MarkReady.
func TestStart_nodesAreReadyUnlessUnmarked(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	addrs := cluster.Addrs()
	for _, tc := range []struct {
		name string
		urls []string
	}{
		{"independent", redlocktest.Start(t, redlocktest.Options{Nodes: 3}).URLs()},
		{"redisCluster", []string{"redis://" + addrs[0] + "?cluster=1&addr=" + strings.Join(addrs[1:], "&addr=")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, err := goredis.Dial(t.Context(), tc.urls, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			for _, key := range []string{"job", "orders:{42}", "other"} {
				// Acquire, within a deadline far below the recovery
				// delay: a busy host may time out a cold node's first
				// calls (loading the library), while recovering nodes
				// would refuse it to the end.
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				lock, err := client.Acquire(ctx, key)
				cancel()
				if err != nil {
					t.Fatalf("Acquire(%q) on new nodes: %v", key, err)
				}
				lock.Release(t.Context())
			}
		})
	}
	t.Run("unmarked", func(t *testing.T) {
		nodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3, Unmarked: true})
		client, err := goredis.Dial(t.Context(), nodes.URLs(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		_, err = client.TryAcquire(t.Context(), "job")
		var qe *redlock.QuorumError
		if !errors.Is(err, redlock.ErrNotAcquired) || !errors.As(err, &qe) || !slices.ContainsFunc(qe.Nodes, func(r redlock.NodeResult) bool { return r.Outcome == redlock.OutcomeRecovering }) {
			t.Fatalf("TryAcquire on unmarked nodes: %v, want nodes recovering", err)
		}
		if err := client.MarkReady(t.Context(), false); err != nil {
			t.Fatal(err)
		}
		lock, err := client.TryAcquire(t.Context(), "job")
		if err != nil {
			t.Fatalf("TryAcquire after MarkReady: %v", err)
		}
		lock.Release(t.Context())
	})
}

// A replica started with a replicaof line is left to its master, whose
// marker reaches it by replication.
func TestStart_replicaGetsItsMastersMarker(t *testing.T) {
	t.Parallel()
	master := redlocktest.Start(t, redlocktest.Options{Nodes: 1}).Node(0)
	replica := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
		Config: []string{"replicaof 127.0.0.1 " + master.Addr()[strings.LastIndex(master.Addr(), ":")+1:]}}).Node(0)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		got, err := replica.Do(ctx, "GET", "redlock:marker")
		if err == nil && got == "0" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("replica's restart marker: %q, %v; want \"0\"", got, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/fence"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// A holder that pauses past its lock's validity (a GC pause, SIGSTOP) and
// then writes is refused, and the write of the client that took the lock
// meanwhile stands.
func TestStore_pausedHolderIsRefused(t *testing.T) {
	ctx := t.Context()
	lockNodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	data := redlocktest.Start(t, redlocktest.Options{Nodes: 1, AppendFsyncAlways: true})
	store := fence.New(adapters[0].conn(t, data.Node(0).Addr()), nil)

	client1, client2 := dialLockNodes(t, lockNodes), dialLockNodes(t, lockNodes)
	// A new deployment: no lock can be outstanding.
	if err := client1.MarkReady(ctx, false); err != nil {
		t.Fatal(err)
	}

	const ttl = 500 * time.Millisecond
	lock1, err := client1.Acquire(ctx, "orders:42", redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Write(ctx, "orders:42", lock1.Fence(), "client 1: packed"); err != nil {
		t.Fatalf("client 1's write while it holds the lock: %v", err)
	}

	// Client 1 pauses past its validity; the lock expires on the nodes and
	// client 2 takes it and writes.
	time.Sleep(time.Until(lock1.Until()) + 10*time.Millisecond)
	acquireCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lock2, err := client2.Acquire(acquireCtx, "orders:42", redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer lock2.Release(ctx)
	if lock2.Fence() <= lock1.Fence() {
		t.Fatalf("client 2's fence %d is not greater than client 1's %d", lock2.Fence(), lock1.Fence())
	}
	if err := store.Write(ctx, "orders:42", lock2.Fence(), "client 2: shipped"); err != nil {
		t.Fatalf("client 2's write: %v", err)
	}

	// Client 1 wakes up and, unaware, sends its late write.
	err = store.Write(ctx, "orders:42", lock1.Fence(), "client 1: cancelled")
	wantLateWriteRefused(t, err, lock1.Fence(), lock2.Fence())
	value, last, err := store.Read(ctx, "orders:42")
	if err != nil {
		t.Fatal(err)
	}
	if value != "client 2: shipped" || last != lock2.Fence() {
		t.Errorf("stored %q with fence %d, want client 2's write with %d", value, last, lock2.Fence())
	}
	if !errors.Is(lock1.Err(), redlock.ErrLockExpired) {
		t.Errorf("client 1's lock reports %v, want ErrLockExpired", lock1.Err())
	}
}

// A holder makes several updates under one lock, plain writes and a
// read-modify-write, all with its one token; once the next holder has
// written, the first holder's token is refused.
func TestStore_holderWritesMoreThanOnce(t *testing.T) {
	ctx := t.Context()
	lockNodes := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	data := redlocktest.Start(t, redlocktest.Options{Nodes: 1, AppendFsyncAlways: true})
	store := fence.New(adapters[0].conn(t, data.Node(0).Addr()), nil)
	client1, client2 := dialLockNodes(t, lockNodes), dialLockNodes(t, lockNodes)
	if err := client1.MarkReady(ctx, false); err != nil {
		t.Fatal(err)
	}

	lock1, err := client1.Acquire(ctx, "orders:7", redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{"packed", "labelled"} {
		if err := store.Write(ctx, "orders:7", lock1.Fence(), state); err != nil {
			t.Fatalf("the holder's write of %q: %v", state, err)
		}
	}
	state, err := store.ReadFenced(ctx, "orders:7", lock1.Fence())
	if err != nil || state != "labelled" {
		t.Fatalf("the holder's fenced read: %q, %v", state, err)
	}
	if err := store.Write(ctx, "orders:7", lock1.Fence(), state+", shipped"); err != nil {
		t.Fatalf("the holder's write after its fenced read: %v", err)
	}
	if err := lock1.Release(ctx); err != nil {
		t.Fatal(err)
	}

	lock2, err := client2.Acquire(ctx, "orders:7", redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer lock2.Release(ctx)
	if err := store.Write(ctx, "orders:7", lock2.Fence(), "returned"); err != nil {
		t.Fatalf("the next holder's write: %v", err)
	}
	err = store.Write(ctx, "orders:7", lock1.Fence(), "delivered")
	wantLateWriteRefused(t, err, lock1.Fence(), lock2.Fence())
	if value, last, err := store.Read(ctx, "orders:7"); err != nil || value != "returned" || last != lock2.Fence() {
		t.Errorf("stored %q with fence %d (%v), want the next holder's write with %d", value, last, err, lock2.Fence())
	}
}

// dialLockNodes returns a Client over every node of cluster, closed at the
// end of the test.
func dialLockNodes(t *testing.T, cluster *redlocktest.Cluster) *redlock.Client {
	t.Helper()
	c, err := goredis.Dial(t.Context(), cluster.URLs(), &redlock.Options{NodeTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wantLateWriteRefused fails the test unless err refuses a write with token
// because last was written.
func wantLateWriteRefused(t *testing.T, err error, token, last uint64) {
	t.Helper()
	var stale *fence.StaleTokenError
	if !errors.Is(err, fence.ErrStaleToken) || !errors.As(err, &stale) {
		t.Fatalf("client 1's late write: %v, want ErrStaleToken", err)
	}
	if stale.Token != token || stale.Last != last {
		t.Errorf("refusal names token %d and last %d, want %d and %d", stale.Token, stale.Last, token, last)
	}
}

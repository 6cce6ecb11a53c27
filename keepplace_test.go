package redlock_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A waiter whose retry delay is a minute keeps its place in the key's
// queue, and the key's waiting mark, on every node, long past the time
// they last after its one refused attempt; the release that comes then
// names it and wakes it, before its retry delay.
func TestAcquire_longRetryDelayKeepsThePlace(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, fast())
		waiter := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 300 * time.Millisecond,
			Retry: redlock.Jittered(time.Minute, time.Minute)})
		held, err := holder.TryAcquire(bg, "long", redlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := acquireLater(waiter, "long")
		kept := placeKeptPast(t, cluster, "long", waiter, 2*time.Second+redlock.QueueLasts)
		eventually(t, "the waiter's place kept past its lapse on every node", kept)
		held.Release(bg)
		wantWoken(t, got, "the waiter, by the release naming it")
	})
}

// A reader whose retry delay is a minute keeps the key's waiting mark, so
// that the writer's release, long after the reader's one refused attempt,
// is announced and wakes it.
func TestShared_longRetryDelayKeepsTheMark(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	writer := newClient(t, cluster, adapters[0], fast())
	reader := newClient(t, cluster, adapters[1], &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 300 * time.Millisecond,
		Retry: redlock.Jittered(time.Minute, time.Minute)})
	held, err := writer.TryAcquire(bg, "page", redlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := acquireLater(reader, "page", redlock.WithShared())
	eventually(t, "the reader refused and listening", func() bool { return reader.Listening("page") == 1 })
	// A refusal sets the mark for QueueLasts and a second: it is still
	// there well past that only if the reader renews it. The refusal
	// returned at a quorum: the last node may set it a little later.
	markKeptPastItsLapse(t, cluster, "page")
	held.Release(bg)
	wantWoken(t, got, "the reader, by the writer's release")
}

// placeKeptPast returns a check that c's place in key's queue is on every
// node, and that more than d passed since c began waiting: its one
// refusal kept it there for QueueLasts only. It fails the test when the
// place or the key's waiting mark is missing from a node once the waiter
// entered the queue on each.
func placeKeptPast(t *testing.T, cluster *redlocktest.Cluster, key string, c *redlock.Client, d time.Duration) func() bool {
	queue, _ := redlock.QueueKeys(key)
	var since int64 // the place's score: when c began waiting, in µs
	return func() bool {
		var scores []string
		for _, n := range cluster.Nodes() {
			score := do(t, n, "ZSCORE", queue, c.ID())
			mark := keyOn(t, n, redlock.WaitingKey(key))
			if since != 0 && (score == "" || mark == "") {
				t.Fatalf("node %d: the place (%q) or the mark (%q) lapsed", n.Index(), score, mark)
			}
			scores = append(scores, score)
		}
		if slices.Contains(scores, "") {
			return false
		}
		s, err := strconv.ParseInt(scores[0], 10, 64)
		if err != nil {
			t.Fatalf("score %q", scores[0])
		}
		since = s
		return time.Since(time.UnixMicro(since)) > d
	}
}

// A waiter for a set of keys, or for a permit, whose retry delay is a
// minute keeps the waiting marks of the keys it listens for (not its
// places, which lapse): the release that comes long after its one refused
// attempt is announced and wakes it, before its retry delay.
func TestSetAndPermit_longRetryDelayKeepsTheMarks(t *testing.T) {
	for _, c := range []struct {
		name, listened string
		acquire        func(w *redlock.Client) <-chan *redlock.Lock
		hold           []redlock.LockOption
	}{
		{"set", "s2", func(w *redlock.Client) <-chan *redlock.Lock {
			got := make(chan *redlock.Lock, 1)
			go func() {
				ctx, cancel := context.WithTimeout(bg, 10*time.Second)
				defer cancel()
				set, err := w.AcquireAll(ctx, []string{"s1", "s2"})
				if err != nil {
					got <- nil
					return
				}
				set.Locks()[1].Release(bg)
				got <- set.Locks()[0]
			}()
			return got
		}, nil},
		{"permit", redlock.PermitKey("sem", 1), func(w *redlock.Client) <-chan *redlock.Lock {
			return acquireLater(w, "sem", redlock.WithLimit(1))
		}, []redlock.LockOption{redlock.WithLimit(1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
			holder := newClient(t, cluster, adapters[0], fast())
			waiter := newClient(t, cluster, adapters[1], &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 300 * time.Millisecond,
				Retry: redlock.Jittered(time.Minute, time.Minute)})
			name := c.listened
			if c.hold != nil {
				name = "sem"
			}
			held, err := holder.TryAcquire(bg, name, append(c.hold, redlock.WithTTL(30*time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			got := c.acquire(waiter)
			eventually(t, "the waiter refused and listening", func() bool { return waiter.Listening(c.listened) == 1 })
			markKeptPastItsLapse(t, cluster, c.listened)
			held.Release(bg)
			wantWoken(t, got, "the waiter, by the holder's release")
		})
	}
}

// markKeptPastItsLapse waits until key's waiting mark is on every node, then
// for well past the time it lasts after one refusal, and fails the test if
// it lapses meanwhile: only a waiter that renews it keeps it.
func markKeptPastItsLapse(t *testing.T, cluster *redlocktest.Cluster, key string) {
	t.Helper()
	marked := func() bool {
		for _, n := range cluster.Nodes() {
			if keyOn(t, n, redlock.WaitingKey(key)) == "" {
				return false
			}
		}
		return true
	}
	eventually(t, "the waiter's mark on every node", marked)
	past := time.Now().Add(2*time.Second + redlock.QueueLasts)
	eventually(t, "the waiter's mark kept past its lapse on every node", func() bool {
		if !marked() {
			t.Fatal("the waiting mark lapsed")
		}
		return time.Now().After(past)
	})
}

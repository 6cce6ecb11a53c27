package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// A release that carries the attempt of its client's next goroutine does
// not hand the lock over past another client queued before that
// goroutine's turn came: the other client goes first. So goroutines of one
// client that keep handing a lock to each other cannot keep it from the
// other clients in line.
func TestHandoff_anotherClientQueuedFirstGoesFirst(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, ad adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		// The handing client's retry delays are far longer than the test:
		// its next goroutine gets the lock from its release, or from a
		// release that names its client. The other client tries often.
		a := newClient(t, cluster, ad, &redlock.Options{NodeTimeout: 300 * time.Millisecond,
			Retry: redlock.Jittered(time.Minute, time.Minute)})
		b := newClient(t, cluster, ad, &redlock.Options{NodeTimeout: 300 * time.Millisecond,
			Retry: redlock.Jittered(10*time.Millisecond, 50*time.Millisecond)})
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()

		first, err := a.Acquire(ctx, "turns")
		if err != nil {
			t.Fatal(err)
		}
		defer first.Release(bg)
		key := first.WireKey()
		bGot := acquireUntilCleanup(t, ctx, b, "turns")
		queue, _ := redlock.QueueKeys(key)
		// Refused, it queued on a quorum at least: a node that did not
		// answer in time may have missed the attempt, and its next ones
		// keep its place.
		pollNodes(t, ctx, cluster, b.Quorum(), "the other client queued", func(n *redlocktest.Node) bool {
			_, err := n.Do(ctx, "ZSCORE", queue, b.ID())
			return err == nil
		})
		aGot := acquireUntilCleanup(t, ctx, a, "turns")
		for !a.HandoffParked(key) {
			if ctx.Err() != nil {
				t.Fatal("the next goroutine never offered its attempt to the release")
			}
			time.Sleep(time.Millisecond)
		}
		var diag []string
		for _, n := range cluster.Nodes() {
			_, err := n.Do(ctx, "ZSCORE", queue, b.ID())
			_, err2 := n.Do(ctx, "ZSCORE", queue, a.ID())
			diag = append(diag, fmt.Sprintf("b:%v a:%v", err == nil, err2 == nil))
		}
		if err := first.Release(bg); err != nil {
			t.Fatal(err)
		}

		select {
		case r := <-bGot:
			if r.err != nil {
				t.Fatalf("the client queued first: %v", r.err)
			}
			r.lock.Release(bg)
		case r := <-aGot:
			if r.err == nil {
				r.lock.Release(bg)
			}
			t.Log(diag)
			t.Fatalf("the release handed the lock to its client's next goroutine (err %v) past the other client queued "+
				"before it", r.err)
		}
	})
}

// acquireUntilCleanup runs c.Acquire(ctx, name) in a goroutine and returns
// where its outcome arrives; the test's clean-up, before c is closed,
// cancels the call and waits for it to end.
func acquireUntilCleanup(t *testing.T, ctx context.Context, c *redlock.Client, name string) <-chan acquired {
	ctx, cancel := context.WithCancel(ctx)
	out, done := make(chan acquired, 1), make(chan struct{})
	go func() {
		defer close(done)
		lock, err := c.Acquire(ctx, name)
		out <- acquired{lock, err}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out
}

// pollNodes waits until ok holds on at least want nodes of cluster, or
// fails the test, saying what it waited for, when ctx ends.
func pollNodes(t *testing.T, ctx context.Context, cluster *redlocktest.Cluster, want int, what string, ok func(*redlocktest.Node) bool) {
	t.Helper()
	for {
		n := 0
		for _, node := range cluster.Nodes() {
			if ok(node) {
				n++
			}
		}
		if n >= want {
			return
		}
		if err := ctx.Err(); err != nil {
			t.Fatal(errors.Join(fmt.Errorf("waiting for %s on %d nodes, %d so far", what, want, n), err))
		}
		time.Sleep(time.Millisecond)
	}
}

// A waiter second in line that tries at its retry delay, no release having
// woken it, finds the key free in the instant between a release and the
// attempt of the first in line, which the release woke: it defers to the
// first while the first's place lasts, and takes a free key once it is
// first itself. An attempt that a release woke it for takes a free key.
func TestQueue_secondInLinePollDefersToTheFirst(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	const key = "line"
	queue, deadlines := "redlock:queue:"+key, "redlock:queue-until:"+key
	now := time.Now().UnixMicro()
	clock, lasts := fmt.Sprint(now), fmt.Sprint(time.Minute.Microseconds())
	for _, cmd := range [][]string{
		{"ZADD", queue, fmt.Sprint(now - 2000), "first"},
		{"ZADD", queue, fmt.Sprint(now - 1000), "second"},
		{"HSET", deadlines, "first", fmt.Sprint(now + time.Minute.Microseconds()), "second", fmt.Sprint(now + time.Minute.Microseconds())},
		{"SET", redlock.WaitingKey(key), "1", "PX", "60000"},
	} {
		if _, err := node.Do(bg, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	attempt := func(token, mode string) string {
		t.Helper()
		v, err := node.Do(bg, "EVAL", redlock.QueuedAcquireScriptSource, "7", key, redlock.FenceKey(key), redlock.MarkerKey,
			redlock.ProcessKey, queue, deadlines, redlock.WaitingKey(key),
			token, "10000", "0", "60000", clock, "second", fmt.Sprint(now-1000), lasts, mode)
		if err != nil {
			t.Fatal(err)
		}
		return v[:1]
	}
	if got := attempt("t1", "4"); got != "0" {
		t.Fatalf("the second's poll took the free key from the first in line: reply %q", got)
	}
	if got := attempt("t2", "0"); got != "1" {
		t.Fatalf("the second's woken attempt: reply %q, want a grant", got)
	}
	if _, err := node.Do(bg, "DEL", key); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Do(bg, "ZREM", queue, "first"); err != nil {
		t.Fatal(err)
	}
	if got := attempt("t3", "4"); got != "1" {
		t.Fatalf("the second's poll, first in line now: reply %q, want a grant", got)
	}
}

// A set or permit waiter's attempt that a release woke a node timeout
// after it named another client first (mode 5) does not defer to that
// client, which let its turn pass; it still defers to any other live
// client in line before it, as every attempt of a set waiter does (mode
// 2).
func TestQueue_setWaiterPassesOnlyTheClientThatLetItsTurnPass(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	now := time.Now().UnixMicro()
	clock, lasts, until := fmt.Sprint(now), fmt.Sprint(time.Minute.Microseconds()), fmt.Sprint(now+time.Minute.Microseconds())
	attempt := func(key string, queued []string, mode ...string) string {
		t.Helper()
		queue, deadlines := redlock.QueueKeys(key)
		for i, id := range append(queued, "me") {
			do(t, node, "ZADD", queue, fmt.Sprint(now-int64(10-i)*1000), id)
			do(t, node, "HSET", deadlines, id, until)
		}
		do(t, node, "SET", redlock.WaitingKey(key), "1", "PX", "60000")
		args := append([]string{"EVAL", redlock.QueuedAcquireScriptSource, "7", key, redlock.FenceKey(key), redlock.MarkerKey,
			redlock.ProcessKey, queue, deadlines, redlock.WaitingKey(key),
			"t-" + key, "10000", "0", "60000", clock, "me", fmt.Sprint(now - 1000), lasts}, mode...)
		v, err := node.Do(bg, args...)
		if err != nil {
			t.Fatal(err)
		}
		return v[:1]
	}
	for _, c := range []struct {
		key    string
		queued []string
		mode   []string
		want   string
	}{
		{"k1", []string{"gone"}, []string{"2"}, "0"},
		{"k2", []string{"gone"}, []string{"5", "gone"}, "1"},
		{"k3", []string{"live"}, []string{"5", "gone"}, "0"},
		{"k4", []string{"gone", "live"}, []string{"5", "gone"}, "0"},
	} {
		if got := attempt(c.key, c.queued, c.mode...); got != c.want {
			t.Errorf("queued behind %v, mode %v: reply %q, want %q", c.queued, c.mode, got, c.want)
		}
	}
}

// A release shortens the places of the two clients it names, and only
// theirs, to its clock plus the time it is given (its seventh argument),
// never lengthening one that ends sooner; a release without that argument
// leaves every place as it was.
func TestQueue_releaseShortensOnlyThePlacesOfTheClientsItNames(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	now := time.Now().UnixMicro()
	soon, later := fmt.Sprint(now+100_000), fmt.Sprint(now+time.Minute.Microseconds())
	release := func(key string, named ...string) map[string]string {
		t.Helper()
		queue, deadlines := redlock.QueueKeys(key)
		for i, id := range []string{"first", "second", "third"} {
			do(t, node, "ZADD", queue, fmt.Sprint(now-int64(10-i)*1000), id)
			do(t, node, "HSET", deadlines, id, later)
		}
		do(t, node, "HSET", deadlines, "second", soon)
		do(t, node, "SET", redlock.WaitingKey(key), "1", "PX", "60000")
		do(t, node, "SET", key, "t-"+key, "PX", "60000")
		args := append([]string{"EVAL", redlock.ReleaseScriptSource, "4", key, queue, deadlines, redlock.WaitingKey(key),
			"t-" + key, redlock.ReleaseChannel("", false), fmt.Sprint(now), "holder", "", ""}, named...)
		if _, err := node.Do(bg, args...); err != nil {
			t.Fatal(err)
		}
		ends := map[string]string{}
		for _, id := range []string{"first", "second", "third"} {
			ends[id] = do(t, node, "HGET", deadlines, id)
		}
		return ends
	}
	want := map[string]string{"first": fmt.Sprint(now + 500_000), "second": soon, "third": later}
	if got := release("k1", "500000"); !maps.Equal(got, want) {
		t.Errorf("a release that names first and second for 500 ms: places end at %v, want %v", got, want)
	}
	want = map[string]string{"first": later, "second": soon, "third": later}
	if got := release("k2"); !maps.Equal(got, want) {
		t.Errorf("a release without the time: places end at %v, want %v", got, want)
	}
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestExtend_movesDeadline(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, fast())
		lock, err := client.TryAcquire(bg, "extend", redlock.WithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		before := lock.Until()
		if err := lock.Extend(bg, 5*time.Second); err != nil {
			t.Fatalf("extend: %v", err)
		}
		if after := lock.Until(); !after.After(before.Add(3 * time.Second)) {
			t.Errorf("deadline moved from %s to %s", before, after)
		}
		// Extend returns once a quorum has answered; the last node follows.
		for _, n := range cluster.Nodes() {
			var pttl string
			for wait := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
				pttl, err = n.Do(bg, "PTTL", "extend")
				if err != nil {
					t.Fatal(err)
				}
				if ms, _ := strconv.Atoi(pttl); (ms >= 4000 && ms <= 5000) || time.Now().After(wait) {
					break
				}
			}
			if ms, _ := strconv.Atoi(pttl); ms < 4000 || ms > 5000 {
				t.Errorf("node %d: PTTL %s after extending to 5 s", n.Index(), pttl)
			}
		}
		if lock.Extensions() != 1 {
			t.Errorf("Extensions() = %d", lock.Extensions())
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
	})
}

func TestExtend_afterExpiry(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	lock, err := client.TryAcquire(bg, "short", redlock.WithTTL(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// It expires on every node, after its deadline here, before the
	// Extend: a key found after it is one the Extend revived.
	waitExpired(t, cluster, "short")
	// Nobody had tried to keep it before it expired: an Extend that comes
	// too late finds it expired, not lost.
	if err := lock.Extend(bg, time.Second); !errors.Is(err, redlock.ErrLockExpired) || errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend after expiry: %v, want ErrLockExpired alone", err)
	}
	if !errors.Is(lock.Err(), redlock.ErrLockExpired) {
		t.Errorf("Err() = %v", lock.Err())
	}
	select {
	case <-lock.Done():
	default:
		t.Error("Done() not closed after expiry")
	}
	for _, n := range cluster.Nodes() {
		if v := keyOn(t, n, "short"); v != "" {
			t.Errorf("node %d: key revived by a failed extend", n.Index())
		}
	}
}

// waitExpired waits until key, taken with a short TTL, expired on every
// node of cluster. Its acquisition returned at a quorum, and may reach a
// node late: the key's fencing counter, which outlives it, shows that it
// did.
func waitExpired(t *testing.T, cluster *redlocktest.Cluster, key string) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		eventually(t, fmt.Sprintf("node %d granted %s", n.Index(), key), func() bool {
			return keyOn(t, n, redlock.FenceKey(key)) != ""
		})
		if v := eventuallyGone(t, n, key); v != "" {
			t.Fatalf("node %d: %s = %q, past its TTL", n.Index(), key, v)
		}
	}
}

func TestExtend_takenOver(t *testing.T) {
	// The lock expired on the servers (here: deleted by hand, as a clock jump
	// would) and another client took it: the extension must not succeed.
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	lock, err := client.TryAcquire(bg, "stolen", redlock.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "SET", "stolen", "other", "PX", "5000"); err != nil {
			t.Fatal(err)
		}
	}
	err = lock.Extend(bg, 0)
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("extend of a taken-over lock: %v", err)
	}
	if countOutcomes(quorumError(t, err))[redlock.OutcomeHeld] < 2 {
		t.Errorf("want a majority of nodes not holding it: %v", err)
	}
	for _, n := range cluster.Nodes() {
		if v := keyOn(t, n, "stolen"); v != "other" {
			t.Errorf("node %d: other holder's key became %q", n.Index(), v)
		}
	}
}

func TestExtend_limit(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	client := newClient(t, cluster, adapters[0], &redlock.Options{MaxExtensions: 2})
	lock, err := client.TryAcquire(bg, "bounded")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	for i := range 2 {
		if err := lock.Extend(bg, 0); err != nil {
			t.Fatalf("extension %d: %v", i+1, err)
		}
	}
	if err := lock.Extend(bg, 0); !errors.Is(err, redlock.ErrExtendLimit) {
		t.Fatalf("third extension: %v, want ErrExtendLimit", err)
	}
}

func TestRelease_neverDeletesAnotherHolder(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, fast())
		old, err := client.TryAcquire(bg, "res", redlock.WithTTL(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		waitForKey(t, cluster, "res", old.Token())
		time.Sleep(150 * time.Millisecond)
		current, err := client.TryAcquire(bg, "res")
		if err != nil {
			t.Fatalf("the expired lock was not free: %v", err)
		}
		// Acquire returns at a quorum; let the last node's reply land
		// before the old holder releases.
		waitForKey(t, cluster, "res", current.Token())
		err = old.Release(bg)
		if !errors.Is(err, redlock.ErrNotHeld) {
			t.Fatalf("release of an expired lock: %v, want ErrNotHeld", err)
		}
		for _, n := range cluster.Nodes() {
			if v := keyOn(t, n, "res"); v != current.Token() {
				t.Errorf("node %d: current holder's key is %q after the old holder's release", n.Index(), v)
			}
		}
		if err := current.Release(bg); err != nil {
			t.Fatal(err)
		}
		// Release returns at a quorum; the last node follows.
		for _, n := range cluster.Nodes() {
			if v := eventuallyGone(t, n, "res"); v != "" {
				t.Errorf("node %d: key %q left after release", n.Index(), v)
			}
		}
	})
}

func TestRelease_twice(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	lock, err := client.TryAcquire(bg, "twice")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(bg); !errors.Is(err, redlock.ErrReleased) {
		t.Fatalf("second release: %v, want ErrReleased", err)
	}
	if err := lock.Extend(bg, 0); !errors.Is(err, redlock.ErrReleased) || !strings.Contains(err.Error(), lock.Key()) {
		t.Fatalf("extend after release: %v, want ErrReleased naming the key", err)
	}
	if !errors.Is(lock.Err(), redlock.ErrReleased) {
		t.Fatalf("Err() = %v", lock.Err())
	}
}

func TestRelease_cancelledContextStillReleases(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	lock, err := client.TryAcquire(bg, "deferred")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("release with a cancelled context: %v", err)
	}
	for _, n := range cluster.Nodes() { // the last node follows the quorum
		if v := eventuallyGone(t, n, "deferred"); v != "" {
			t.Errorf("node %d kept the key", n.Index())
		}
	}
}

func TestExtend_endedContextAsksNoNode(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	lock, err := client.TryAcquire(bg, "ended")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	until := lock.Until()
	ctx, cancel := context.WithCancel(bg)
	cancel()
	err = lock.Extend(ctx, 0)
	if !errors.Is(err, redlock.ErrNotExtended) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Extend with a cancelled context: %v, want ErrNotExtended and context.Canceled", err)
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("%v: no QuorumError", err)
	}
	for _, n := range qe.Nodes {
		if n.Outcome != redlock.OutcomeNotAsked {
			t.Errorf("node %s: %v, want not asked", n.Node, n.Outcome)
		}
	}
	if lock.Err() != nil || !lock.Until().Equal(until) {
		t.Errorf("after the call: Err %v, Until %v; want the lock as it was, valid until %v", lock.Err(), lock.Until(), until)
	}
}

func TestRelease_scriptCacheFlushed(t *testing.T) {
	// After a restart or SCRIPT FLUSH the node answers NOSCRIPT to EVALSHA.
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		client := newClient(t, cluster, a, fast())
		lock, err := client.TryAcquire(bg, "noscript")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cluster.Node(0).Do(bg, "SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		if err := lock.Extend(bg, 0); err != nil {
			t.Fatalf("extend after SCRIPT FLUSH: %v", err)
		}
		cluster.Node(0).Do(bg, "SCRIPT", "FLUSH")
		if err := lock.Release(bg); err != nil {
			t.Fatalf("release after SCRIPT FLUSH: %v", err)
		}
		if v := keyOn(t, cluster.Node(0), "noscript"); v != "" {
			t.Errorf("key left: %q", v)
		}
	})
}

// Without renewal, Done closes a margin before the validity deadline, so that
// the holder still has validity to stop in; with a negative margin, at the
// deadline itself. A lock nobody tried to keep has then expired: it is not
// lost.
func TestDone_firesAMarginBeforeTheDeadline(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	for _, tc := range []struct {
		name   string
		margin time.Duration // Options.LossMargin
		ttl    time.Duration
		want   time.Duration // validity left when Done closes
	}{
		{"default", 0, 2 * time.Second, 200 * time.Millisecond}, // a tenth of the TTL
		{"default floor", 0, 600 * time.Millisecond, 100 * time.Millisecond},
		{"default cap", 0, 300 * time.Millisecond, 60 * time.Millisecond}, // a fifth
		{"set", 150 * time.Millisecond, 2 * time.Second, 150 * time.Millisecond},
		{"none", -1, 300 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := fast()
			opts.LossMargin = tc.margin
			client := newClient(t, cluster, adapters[0], opts)
			lock, err := client.TryAcquire(bg, "deadline", redlock.WithTTL(tc.ttl))
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Release(bg)
			ctx, cancel := lock.Context(bg)
			defer cancel()
			select {
			case <-lock.Done():
			case <-time.After(2 * tc.ttl):
				t.Fatal("Done not closed")
			}
			if got := redlock.LossMarginOf(lock); got != tc.want {
				t.Errorf("loss margin %s, want %s", got, tc.want)
			}
			// Never early: at most the margin is left when Done closes. How
			// much later it closes depends on the scheduler, which a test
			// cannot bound on a loaded machine.
			if left := time.Until(lock.Until()); left > tc.want+time.Millisecond {
				t.Errorf("Done closed with %s of validity left, want at most %s", left, tc.want)
			}
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), redlock.ErrLockExpired) || !errors.Is(lock.Err(), redlock.ErrLockExpired) ||
				errors.Is(lock.Err(), redlock.ErrLockLost) {
				t.Errorf("context cause %v, Err %v; want ErrLockExpired, not ErrLockLost", context.Cause(ctx), lock.Err())
			}
		})
	}
}

// A lock that reaches its deadline has expired when nobody tried to keep
// it, and is lost when its holder did: it called Extend, or asked for
// renewal that then stopped (here at Options.MaxExtensions). Either way
// Done closes and the lock's context is cancelled with Err as its cause.
func TestLock_expiredUnlessKept(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	const ttl = time.Second
	for _, tc := range []struct {
		name      string
		opts      *redlock.Options
		lockOpts  []redlock.LockOption
		extend    bool // call Extend once after the acquisition
		want, not error
	}{
		{"left to expire", fast(), nil, false, redlock.ErrLockExpired, redlock.ErrLockLost},
		{"extended once", fast(), nil, true, redlock.ErrLockLost, redlock.ErrLockExpired},
		{"renewal stopped", &redlock.Options{NodeTimeout: 300 * time.Millisecond, MaxExtensions: 1},
			[]redlock.LockOption{redlock.WithAutoRenew()}, false, redlock.ErrLockLost, redlock.ErrLockExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newClient(t, cluster, adapters[0], tc.opts)
			lock, err := client.TryAcquire(bg, "kept-"+tc.name, append(tc.lockOpts, redlock.WithTTL(ttl))...)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Release(bg)
			ctx, cancel := lock.Context(bg)
			defer cancel()
			if tc.extend {
				// Whether it reaches a quorum or not, the call says that
				// the holder wants to keep the lock.
				if err := lock.Extend(bg, 0); err != nil && !errors.Is(err, redlock.ErrNotExtended) {
					t.Fatalf("Extend: %v", err)
				}
			}
			select {
			case <-lock.Done():
			case <-time.After(10 * ttl):
				t.Fatal("Done not closed")
			}
			<-ctx.Done()
			err = lock.Err()
			if !errors.Is(err, tc.want) || errors.Is(err, tc.not) || !errors.Is(context.Cause(ctx), tc.want) {
				t.Errorf("Err %v, context cause %v; want %v, not %v", err, context.Cause(ctx), tc.want, tc.not)
			}
			// The limit says so: nothing failed, the holder's own option
			// ended the lock.
			if limited := tc.opts.MaxExtensions > 0; errors.Is(err, redlock.ErrExtendLimit) != limited {
				t.Errorf("Err %v: ErrExtendLimit %v, want %v", err, !limited, limited)
			}
		})
	}
}

func TestRenew_keepsLockBeyondThreeTTLs(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
		client := newClient(t, cluster, a, fast())
		const ttl = 300 * time.Millisecond
		lock, err := client.TryAcquire(bg, "renewed", redlock.WithTTL(ttl), redlock.WithAutoRenew())
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-lock.Done():
			t.Fatalf("lock lost while renewing: %v", lock.Err())
		case <-time.After(4 * ttl):
		}
		if err := lock.Err(); err != nil {
			t.Fatalf("Err() = %v after 4 TTLs of renewal", err)
		}
		if lock.Extensions() < 3 {
			t.Errorf("%d extensions in 4 TTLs", lock.Extensions())
		}
		if _, err := client.TryAcquire(bg, "renewed"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("another acquire of a renewed lock: %v", err)
		}
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lock.Done():
		case <-time.After(time.Second):
			t.Fatal("Done not closed by Release")
		}
		if !errors.Is(lock.Err(), redlock.ErrReleased) {
			t.Errorf("Err() after release = %v", lock.Err())
		}
	})
}

// Close stops the renewal of the locks its Client holds: they end at their
// deadline, and no extension is tried over the closed connections. A
// second Close returns nil.
func TestRenew_stopsAtClose(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	o, opts := observe(t)
	client := newClient(t, cluster, adapters[0], opts)
	const ttl = 300 * time.Millisecond
	lock, err := client.TryAcquire(bg, "closed-renewal", redlock.WithTTL(ttl), redlock.WithAutoRenew())
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if err := client.Close(); err != nil {
		t.Errorf("a second Close: %v, want nil", err)
	}
	select {
	case <-lock.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done never closed after Close")
	}
	if !errors.Is(lock.Err(), redlock.ErrLockLost) {
		t.Errorf("Err() = %v, want ErrLockLost", lock.Err())
	}
	// The first renewal was due a third of the TTL in, before the deadline.
	if o.recorded(t, "redlock.extensions") {
		if n := o.sum(t, "redlock.extensions", attrs{"redlock.call": "renew"}); n > 0 {
			t.Errorf("%d renewals tried after Close", n)
		}
	}
}

func TestRenew_majorityKilledFiresDoneByDeadline(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
		client := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 100 * time.Millisecond})
		lock := take(t, client, "doomed", redlock.WithTTL(time.Second), redlock.WithAutoRenew())
		for _, i := range []int{0, 1, 2} {
			if err := cluster.Node(i).Kill(); err != nil {
				t.Fatal(err)
			}
		}
		deadline := lock.Until() // renewals can no longer move it
		select {
		case <-lock.Done():
		case <-time.After(3 * time.Second):
			t.Fatal("Done never closed after a majority died")
		}
		at := time.Now()
		// The timer fires at the deadline; allow scheduling slack only.
		if late := at.Sub(deadline); late > 100*time.Millisecond {
			t.Errorf("Done closed %s after the validity deadline", late)
		}
		err := lock.Err()
		if !errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrNotExtended) {
			t.Fatalf("Err() = %v, want ErrLockLost, not ErrNotExtended", err)
		}
		// The loss tells each node's answer to the last failed renewal.
		qe := quorumError(t, err)
		if qe.Op != "extend" || len(qe.Nodes) != 5 {
			t.Fatalf("the loss's QuorumError: op %q, %d nodes; want extend, 5", qe.Op, len(qe.Nodes))
		}
		for _, i := range []int{0, 1, 2} {
			if o := qe.Nodes[i].Outcome; o == redlock.OutcomeOK {
				t.Errorf("killed node %d extended the lock: %v", i, err)
			}
		}
	})
}

func TestDo(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	var ran bool
	err := client.Do(bg, "job", func(ctx context.Context) error {
		ran = true
		holding := 0
		for _, n := range cluster.Nodes() {
			if keyOn(t, n, "job") != "" {
				holding++
			}
		}
		if holding < 2 {
			t.Errorf("fn runs with the lock on %d of 3 nodes", holding)
		}
		return errors.New("job failed")
	})
	if !ran || err == nil || err.Error() != "job failed" {
		t.Fatalf("Do returned %v (ran %v), want fn's error alone", err, ran)
	}
	for _, n := range cluster.Nodes() { // the last node follows the quorum
		if v := eventuallyGone(t, n, "job"); v != "" {
			t.Errorf("Do did not release the lock on node %d", n.Index())
		}
	}

	// Losing the lock cancels fn's context with ErrLockLost.
	err = client.Do(bg, "job", func(ctx context.Context) error {
		for _, n := range cluster.Nodes() {
			n.Do(bg, "DEL", "job")
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(5 * time.Second):
			return errors.New("context not cancelled")
		}
	}, redlock.WithTTL(600*time.Millisecond))
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Do after losing the lock: %v, want ErrLockLost", err)
	}
}

// A panic in fn goes on through Do, which releases the lock first: a
// caller that recovers it (as HTTP servers do) leaves nothing held.
func TestDo_panicReleases(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	var lock *redlock.Lock
	recovered := func() (p any) {
		defer func() { p = recover() }()
		client.Do(bg, "job", func(ctx context.Context) error {
			lock, _ = redlock.LockFromContext(ctx)
			panic("bug")
		})
		return nil
	}()
	if recovered != "bug" {
		t.Fatalf("recovered %v from Do, want fn's panic", recovered)
	}
	if err := lock.Release(bg); !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("the lock after fn panicked: Release says %v, want ErrReleased", err)
	}
	if free := nodesFree(t, cluster, "job"); free < 2 {
		t.Errorf("%d of 3 nodes free of the lock after fn panicked, want a quorum", free)
	}
}

// fn finds Do's lock in its context, and in contexts derived from it, with
// its fencing token; each call of Do holds a new lock with a greater token.
func TestDo_lockFromContext(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	if l, ok := redlock.LockFromContext(bg); ok || l != nil {
		t.Errorf("LockFromContext outside Do = %v, %v", l, ok)
	}
	var fences []uint64
	for range 2 {
		err := client.Do(bg, "fenced-job", func(ctx context.Context) error {
			derived, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			lock, ok := redlock.LockFromContext(derived)
			if !ok || lock.Key() != "fenced-job" || lock.Fence() == 0 || lock.Err() != nil {
				t.Fatalf("LockFromContext in fn = %v, %v", lock, ok)
			}
			holding := 0
			for _, n := range cluster.Nodes() {
				if keyOn(t, n, "fenced-job") == lock.Token() {
					holding++
				}
			}
			if holding < 2 {
				t.Errorf("the lock from the context is held on %d of 3 nodes", holding)
			}
			fences = append(fences, lock.Fence())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(fences) != 2 || fences[1] <= fences[0] {
		t.Errorf("fences of two calls of Do: %v, want increasing", fences)
	}

	// Nested calls: each fn sees its own call's lock.
	err := client.Do(bg, "outer", func(ctx context.Context) error {
		return client.Do(ctx, "inner", func(ctx context.Context) error {
			if lock, ok := redlock.LockFromContext(ctx); !ok || lock.Key() != "inner" {
				t.Errorf("nested LockFromContext = %v, %v, want the inner lock", lock, ok)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}

	// A fn that releases the lock itself makes Do report it.
	err = client.Do(bg, "fenced-job", func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx)
		return lock.Release(ctx)
	})
	if !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("Do after fn released the lock: %v, want ErrReleased", err)
	}
}

func TestLock_concurrentUse(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[1], fast())
	lock, err := client.TryAcquire(bg, "shared-lock", redlock.WithAutoRenew(), redlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if err := lock.Extend(bg, 0); err != nil {
					t.Errorf("concurrent extend: %v", err)
				}
				_ = lock.Until()
				_ = lock.Err()
				<-time.After(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	var released, notHeld int
	var mu sync.Mutex
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := lock.Release(bg)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				released++
			case errors.Is(err, redlock.ErrReleased), errors.Is(err, redlock.ErrNotHeld):
				notHeld++
			default:
				t.Errorf("concurrent release: %v", err)
			}
		}()
	}
	wg.Wait()
	if released != 1 {
		t.Errorf("%d releases succeeded, want exactly 1", released)
	}
}

func TestRelease_doesNotOvertakeItsAcquisition(t *testing.T) {
	// Acquire returns at a quorum while the other nodes' requests are still
	// on their way; over a connection pool the release could reach such a
	// node first and leave the key behind, failing the next attempt there.
	// Release returns at a quorum too, and the next acquisition must not
	// overtake it either: it would find the old lock and fail.
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		// A generous node timeout: this test is about ordering, and a loaded
		// machine must not turn it into one about timeouts.
		client := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 2 * time.Second})
		left := 0
		for i := range 300 {
			lock, err := client.TryAcquire(bg, "loop", redlock.WithTTL(10*time.Second))
			if err != nil {
				t.Fatalf("cycle %d: %v", i, err)
			}
			if err := lock.Release(bg); err != nil {
				t.Fatalf("cycle %d: release: %v", i, err)
			}
			if i%30 == 29 {
				// The nodes after the quorum answer within moments; a key
				// that a release overtook stays for its TTL.
				for _, n := range cluster.Nodes() {
					if eventuallyGone(t, n, "loop") != "" {
						left++
						n.Do(bg, "DEL", "loop")
					}
				}
			}
		}
		if left > 0 {
			t.Errorf("%d keys left behind by releases that overtook their acquisition", left)
		}
	})
}

func TestRelease_majorityDownIsNotReleased(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	client := newClient(t, cluster, adapters[0], fast())
	lock, err := client.TryAcquire(bg, "stuck")
	if err != nil {
		t.Fatal(err)
	}
	waitForKey(t, cluster, "stuck", lock.Token())
	for _, i := range []int{0, 1, 2} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	err = lock.Release(bg)
	if !errors.Is(err, redlock.ErrNotReleased) {
		t.Fatalf("release with 3 of 5 nodes down: %v, want ErrNotReleased", err)
	}
	if countOutcomes(quorumError(t, err))[redlock.OutcomeOK] != 2 {
		t.Errorf("want the 2 live nodes to have deleted the key: %v", err)
	}
	// Not marked released: once the nodes are back, releasing again works.
	for _, i := range []int{0, 1, 2} {
		if err := cluster.Node(i).Start(bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := lock.Release(bg); !errors.Is(err, redlock.ErrNotHeld) && err != nil {
		t.Fatalf("second release: %v", err)
	}
	if err := lock.Release(bg); !errors.Is(err, redlock.ErrReleased) {
		t.Fatalf("third release: %v, want ErrReleased", err)
	}
}

func TestLock_nodesTellEachNodesAnswer(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 2 * time.Second})
		if err := cluster.Node(2).Kill(); err != nil {
			t.Fatal(err)
		}
		lock, err := client.TryAcquire(bg, "answers")
		if err != nil {
			t.Fatalf("acquire with one node down: %v", err)
		}
		defer lock.Release(bg)
		nodes := lock.Nodes()
		if len(nodes) != 3 {
			t.Fatalf("Nodes() has %d entries, want 3: %v", len(nodes), nodes)
		}
		for i, name := range client.Nodes() {
			if nodes[i].Node != name {
				t.Errorf("Nodes()[%d] is %s, want %s", i, nodes[i].Node, name)
			}
		}
		if nodes[0].Outcome != redlock.OutcomeOK || nodes[1].Outcome != redlock.OutcomeOK {
			t.Errorf("live nodes: %v and %v, want both granted", nodes[0], nodes[1])
		}
		if nodes[2].Outcome == redlock.OutcomeOK {
			t.Errorf("killed node reported as granting: %v", nodes[2])
		}
		nodes[0].Outcome = redlock.OutcomeError
		if lock.Nodes()[0].Outcome != redlock.OutcomeOK {
			t.Error("changing the returned slice changed the lock's")
		}
	})
}

func TestAcquire_waitsForThisClientsTrailingRelease(t *testing.T) {
	// Release returns at a quorum. On a node that has not answered yet, the
	// next acquisition of the key by the same client goes after that
	// release, not before it. Here a paused node has not answered the first
	// acquisition, so the release waits in the client for that answer (see
	// TestRelease_doesNotOvertakeItsAcquisition); the second acquisition
	// must wait behind the release, or it would reach the node first, find
	// the first lock there and be refused, and the node would end up empty.
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, &redlock.Options{NodeTimeout: 2 * time.Second})
		slow := cluster.Node(2)
		for round := range 3 {
			if err := slow.Pause(); err != nil {
				t.Fatal(err)
			}
			first, err := client.TryAcquire(bg, "trail")
			if err != nil {
				t.Fatalf("round %d: acquire with one node paused: %v", round, err)
			}
			if err := first.Release(bg); err != nil {
				t.Fatalf("round %d: release with one node paused: %v", round, err)
			}
			second, err := client.TryAcquire(bg, "trail")
			if err != nil {
				t.Fatalf("round %d: acquire after release, one node paused: %v", round, err)
			}
			time.Sleep(100 * time.Millisecond)
			if err := slow.Resume(); err != nil {
				t.Fatal(err)
			}
			// The paused node runs the first acquisition, its release, and
			// then the second acquisition.
			waitForKey(t, cluster, "trail", second.Token())
			if err := second.Release(bg); err != nil {
				t.Fatalf("round %d: release: %v", round, err)
			}
			for _, n := range cluster.Nodes() {
				if v := eventuallyGone(t, n, "trail"); v != "" {
					t.Fatalf("round %d: node %d still holds %q", round, n.Index(), v)
				}
			}
		}
	})
}

// A release that misses a node's deadline under load (queued behind slower
// requests, it is dropped unsent) is sent again in the background, so the
// key does not stay there until its TTL passes.
func TestRelease_missedNodeIsFinishedInTheBackground(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 100 * time.Millisecond})
		lock := take(t, client, "kept")
		waitForKey(t, cluster, "kept", lock.Token())
		slow := cluster.Node(0)
		stall(t, client, slow)
		if err := lock.Release(bg); err != nil {
			t.Fatalf("Release with one node of three paused: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // past the release's deadline there
		if err := slow.Resume(); err != nil {
			t.Fatal(err)
		}
		waitGone(t, slow, "kept", "the release the slow node missed was not finished: the key stays until its TTL")
	})
}

// A release that a slow node ran after its deadline, its reply lost (rueidis
// closes a connection whose request passed its deadline), is a release: the
// retry that finds the token gone does not turn it into ErrNotHeld while the
// lock was valid, for no other write can have removed the key.
func TestRelease_lateOnASlowNodeIsReleased(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
		client := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 50 * time.Millisecond})
		lock := take(t, client, "slow-release")
		node := cluster.Node(0)
		if err := node.Pause(); err != nil {
			t.Fatal(err)
		}
		released := make(chan error, 1)
		go func() { released <- lock.Release(bg) }()
		time.Sleep(150 * time.Millisecond) // past the release's deadline
		if err := node.Resume(); err != nil {
			t.Fatal(err)
		}
		if err := <-released; err != nil {
			t.Errorf("Release that the node ran late: %v, want nil", err)
		}
		if v := keyOn(t, node, "slow-release"); v != "" {
			t.Errorf("the key holds %q after the release", v)
		}
	})
}

// The clean-up after a failed attempt is finished in the background on a
// node that missed it, as a lock's release is: queued behind requests stuck
// on a paused node, it was dropped past its deadline, and the attempt's
// grant stayed there until its TTL. On a crowded key such leftovers on a
// few nodes kept every client from a majority for seconds.
func TestTryAcquire_failedAttemptsCleanUpIsFinishedInTheBackground(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 100 * time.Millisecond})
		slow := cluster.Node(0)
		do(t, slow, "SET", "contended", "attempt-token", "PX", "10000") // the failed attempt's grant
		stall(t, client, slow)
		client.ReleaseFailedAttempt(bg, "contended", "attempt-token", 10*time.Second, []bool{true, false, false})
		time.Sleep(300 * time.Millisecond) // past the clean-up's deadline there
		if err := slow.Resume(); err != nil {
			t.Fatal(err)
		}
		waitGone(t, slow, "contended", "the clean-up the slow node missed was not finished: the grant stays until its TTL")
	})
}

// A refused attempt leaves nothing to clean up on the nodes that refused
// it: it costs one script call per node, not a release after it, but for
// the release that follows a node whose answer came after the verdict.
func TestTryAcquire_refusedEverywhereSendsNoRelease(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		for _, nodes := range []int{1, 3} {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: nodes})
			holder := newClient(t, cluster, a, fast())
			client := newClient(t, cluster, a, fast())
			lock, err := holder.TryAcquire(bg, "busy")
			if err != nil {
				t.Fatal(err)
			}
			waitForKey(t, cluster, "busy", lock.Token())
			for _, n := range cluster.Nodes() {
				do(t, n, "CONFIG", "RESETSTAT")
			}
			if _, err := client.TryAcquire(bg, "busy"); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("a held key: %v, want ErrNotAcquired", err)
			}
			time.Sleep(200 * time.Millisecond) // a node's late answer, and anything sent after it
			// A node that had not answered when the refusals of the others
			// settled the attempt is sent the release, after its acquire.
			if n, most := scriptCalls(t, cluster), nodes+min(nodes-1, 1); n < nodes || n > most {
				t.Errorf("%d script calls for a refused attempt on %d nodes, want %d to %d", n, nodes, nodes, most)
			}
			lock.Release(bg)
		}
	})
}

// A release that a majority of nodes misses under a pause shorter than the
// background retries' window succeeds once they answer it again: Release
// waits for the release finished in the background, instead of reporting a
// release that does happen as failed.
func TestRelease_waitsForTheReleaseFinishedInTheBackground(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, &redlock.Options{TTL: 5 * time.Second, NodeTimeout: 50 * time.Millisecond})
		lock := take(t, client, "paused")
		waitForKey(t, cluster, "paused", lock.Token())
		for _, i := range []int{1, 2} {
			if err := cluster.Node(i).Pause(); err != nil {
				t.Fatal(err)
			}
		}
		time.AfterFunc(200*time.Millisecond, func() {
			cluster.Node(1).Resume()
			cluster.Node(2).Resume()
		})
		if err := lock.Release(bg); err != nil {
			t.Fatalf("a release the paused majority answered once resumed: %v", err)
		}
		for _, n := range cluster.Nodes() {
			if v := eventuallyGone(t, n, "paused"); v != "" {
				t.Errorf("node %d: key left after release", n.Index())
			}
		}
	})
}

// stall pauses slow and leaves two requests of client stuck on it, which
// fill its queue's slots: the next request to it waits in the queue past
// its deadline, and is dropped unsent.
func stall(t *testing.T, client *redlock.Client, slow *redlocktest.Node) {
	t.Helper()
	if err := slow.Pause(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if l, err := client.TryAcquire(bg, fmt.Sprint("filler-", i)); err == nil {
			t.Cleanup(func() { l.Release(bg) })
		}
	}
}

// waitGone waits up to 5 s for key to be gone from n, and fails with
// message if it stays.
func waitGone(t *testing.T, n *redlocktest.Node, key, message string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); keyOn(t, n, key) != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(message)
		}
	}
}

// A Release that fails stops the lock's renewal: the holder let it go, so
// the lock ends at its deadline as one that expired, and is not kept by
// renewals nobody wants once the nodes answer again.
func TestRelease_failedStopsTheRenewal(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		lock, err := c.Acquire(bg, "renewed", redlock.WithAutoRenew())
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{1, 2} {
			if err := cluster.Node(i).Pause(); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { resumeAll(t, cluster) })
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		defer cancel()
		if err := lock.Release(ctx); !errors.Is(err, redlock.ErrNotReleased) {
			t.Fatalf("Release with two of three nodes paused = %v, want ErrNotReleased", err)
		}
		until := lock.Until()
		resumeAll(t, cluster)
		select {
		case <-lock.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the lock whose release failed did not end within 10s")
		}
		if err := lock.Err(); !errors.Is(err, redlock.ErrLockExpired) {
			t.Errorf("the lock whose release failed ended with %v, want ErrLockExpired (not renewed)", err)
		}
		if !lock.Until().Equal(until) {
			t.Errorf("the lock was extended after its release failed: until %v, then %v", until, lock.Until())
		}
		for i, n := range cluster.Nodes() {
			if v := eventuallyGone(t, n, "renewed"); v != "" {
				t.Errorf("node %d still holds the key after the lock's TTL", i)
			}
		}
	})
}

// A release that a quorum does not answer waits for the background tries
// no longer than the lock's validity: past it, the lock expires on the
// nodes anyway.
func TestRelease_waitsNoLongerThanTheLock(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		c := newClient(t, cluster, a, fast())
		lock, err := c.Acquire(bg, "k", redlock.WithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range cluster.Nodes()[1:] {
			if err := n.Pause(); err != nil {
				t.Fatal(err)
			}
			defer n.Resume()
		}
		err = lock.Release(bg)
		// The background tries span 2.5 s and more; the slack is for a
		// request under way at the deadline, and a busy machine.
		if late := time.Since(lock.Until()); late > 500*time.Millisecond || !errors.Is(err, redlock.ErrNotReleased) {
			t.Errorf("Release returned %v after the lock's validity ended: %v", late, err)
		}
	})
}

// A renewal stopped before its goroutine ran stays stopped: the lock
// expires at its deadline (a set stops its survivors' renewal so, see
// TestLocks_lossStopsTheOthersRenewal).
func TestLock_renewalStoppedBeforeItRan(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	c := newClient(t, cluster, adapters[0], &redlock.Options{TTL: 300 * time.Millisecond})
	lock, err := c.TryAcquire(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	lock.StartAndStopRenewal()
	select {
	case <-lock.Done():
	case <-time.After(3 * time.Second):
		t.Fatalf("the lock is still held 3 s after its 300ms TTL, after %d extensions", lock.Extensions())
	}
	if n := lock.Extensions(); n != 0 || !errors.Is(lock.Err(), redlock.ErrLockExpired) {
		t.Errorf("%d extensions, Err %v; want none, expired", n, lock.Err())
	}
}

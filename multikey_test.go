package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// holdSet records the holding of every lock of a set from start to end,
// or to the set's validity deadline if that was earlier.
func holdSet(set *redlock.Locks, start, end time.Time) []holding {
	if until := set.Until(); until.Before(end) {
		end = until
	}
	var hs []holding
	for _, l := range set.Locks() {
		hs = append(hs, holding{key: l.Key(), fence: l.Fence(), start: start, end: end})
	}
	return hs
}

// keysOf returns the names of the locks of set, in its order.
func keysOf(set *redlock.Locks) []string {
	var keys []string
	for _, l := range set.Locks() {
		keys = append(keys, l.Key())
	}
	return keys
}

// Clients asking for overlapping sets in crossing orders, separate clients
// and two goroutines of one client, all get their sets again and again:
// nobody waits for a key while holding another, so nobody deadlocks. No key
// is ever held by two sets at once, and its fencing tokens rise.
func TestAcquireAll_crossingOrders(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	sets := [][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"b", "d"}, {"d", "c", "a"}}
	var clients []*redlock.Client
	for i := range 3 {
		clients = append(clients, newClient(t, cluster, adapters[i%2], fast()))
	}
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		holdings []holding
		grants   = make([]int, len(sets))
		wg       sync.WaitGroup
	)
	for g, names := range sets {
		client := clients[g%len(clients)] // sets 0 and 3 share a client
		wg.Go(func() {
			for ctx.Err() == nil {
				set, err := client.AcquireAll(ctx, names)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("set %v: %v", names, err)
					}
					return
				}
				start := time.Now()
				time.Sleep(2 * time.Millisecond)
				hs := holdSet(set, start, time.Now())
				if err := set.Release(bg); err != nil {
					t.Errorf("set %v: release: %v", names, err)
				}
				mu.Lock()
				holdings = append(holdings, hs...)
				grants[g]++
				mu.Unlock()
				if want := slices.Sorted(slices.Values(names)); !slices.Equal(keysOf(set), want) {
					t.Errorf("set %v holds %v, want %v", names, keysOf(set), want)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("sets granted %v times in 3 s", grants)
	for g, n := range grants {
		if n < 3 {
			t.Errorf("set %v granted %d times in 3 s: it hardly progressed", sets[g], n)
		}
	}
	checkHoldings(t, holdings)
}

// fenceCounters returns the fencing counters of keys on each node of
// cluster, one string per node.
func fenceCounters(t *testing.T, cluster *redlocktest.Cluster, keys ...string) []string {
	t.Helper()
	var counters []string
	for _, n := range cluster.Nodes() {
		var b strings.Builder
		for _, k := range keys {
			b.WriteString(do(t, n, "GET", redlock.FenceKey(k)) + " ")
		}
		counters = append(counters, b.String())
	}
	return counters
}

// movedOn counts the nodes whose counters differ between before and after.
func movedOn(before, after []string) int {
	moved := 0
	for i := range before {
		if after[i] != before[i] {
			moved++
		}
	}
	return moved
}

// A set one of whose keys is held elsewhere is not acquired, and its other
// keys are left on no node; a waiting AcquireAll neither holds them nor
// tries again while the key stays held (its own releases of the keys
// granted do not wake it), fails with the context's error when that ends,
// and gets the set once the key is released.
func TestAcquireAll_allOrNothing(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		holder := newClient(t, cluster, a, fast())
		client := newClient(t, cluster, a, fast())
		held, err := holder.TryAcquire(bg, "b", redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		waitForKey(t, cluster, "b", held.Token())
		// A long TTL: a key left behind would outlive waitForKey.
		long := redlock.WithTTL(10 * time.Second)
		_, err = client.TryAcquireAll(bg, []string{"a", "b", "c"}, long)
		if !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "1 of 3 keys not acquired") {
			t.Fatalf("TryAcquireAll with b held: %v, want ErrNotAcquired, 1 of 3 keys", err)
		}
		if qe := quorumError(t, err); qe.Key != "b" {
			t.Errorf("the error names key %q, want the held b", qe.Key)
		}
		waitForKey(t, cluster, "a", "")
		waitForKey(t, cluster, "c", "")
		waitForKey(t, cluster, "b", held.Token())

		slow := redlock.Jittered(time.Minute, time.Minute) // only a release can wake it
		waiter := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 300 * time.Millisecond, Retry: slow})
		// A wait that ends with its context. It also leaves subscribed, for
		// a while, the release channels it listened on, so that the wait
		// below hears its own releases at once if it listens to them.
		ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
		_, err = waiter.AcquireAll(ctx, []string{"c", "b", "a"})
		cancel()
		if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AcquireAll until its deadline: %v, want ErrNotAcquired and DeadlineExceeded", err)
		}
		waitForKey(t, cluster, "a", "")
		waitForKey(t, cluster, "c", "")
		got := acquireAllInBackground(t, waiter, []string{"c", "b", "a"}, 10*time.Second)
		// Each attempt takes the free a and c, and so moves their fencing
		// counters on at least a quorum, which decides it; renewing its
		// places in the queues, as it does every second, does not. The
		// first attempt returned at a quorum, and may still move the
		// counters of the last node: one node that moved is not a retry.
		eventually(t, "the waiter listening for b", func() bool { return waiter.Listening("b") == 1 })
		before := fenceCounters(t, cluster, "a", "c")
		time.Sleep(1500 * time.Millisecond) // long enough for a retry to show
		if after := fenceCounters(t, cluster, "a", "c"); movedOn(before, after) > len(before)/2 {
			t.Errorf("fencing counters of a and c went from %q to %q while b stayed held: the waiter tries again without a release of b", before, after)
		}
		waitForKey(t, cluster, "a", "")
		waitForKey(t, cluster, "c", "")
		if err := held.Release(bg); err != nil {
			t.Fatal(err)
		}
		select {
		case set := <-got:
			if set == nil {
				t.FailNow()
			}
			if keys := keysOf(set); !slices.Equal(keys, []string{"a", "b", "c"}) {
				t.Errorf("the set holds %v, want [a b c]", keys)
			}
			if err := set.Release(bg); err != nil {
				t.Error(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter was not woken by the release of b")
		}
	})
}

// A set extends and releases its locks together; Until is the earliest
// deadline; once a lock of the set is lost, Extend says so, Done closes and
// Err reports the loss, while Release still frees the others.
func TestLocks_extendReleaseAndLoss(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, fast())
		set, err := client.AcquireAll(bg, []string{"z", "x", "y"})
		if err != nil {
			t.Fatal(err)
		}
		locks := set.Locks()
		if keys := keysOf(set); !slices.Equal(keys, []string{"x", "y", "z"}) {
			t.Fatalf("the set holds %v, want [x y z]", keys)
		}
		checkUntil(t, set)
		for _, l := range locks {
			waitForKey(t, cluster, l.Key(), l.Token())
		}
		done := set.Done()
		if err := set.Err(); err != nil {
			t.Fatalf("Err of a held set: %v", err)
		}
		before := set.Until()
		if err := set.Extend(bg, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		for _, l := range locks {
			if l.Extensions() != 1 || l.Until().Before(before.Add(2*time.Second)) {
				t.Errorf("%s: %d extensions, until %v; want 1 extension, until 5 s on", l.Key(), l.Extensions(), l.Until())
			}
		}
		checkUntil(t, set)
		loseY(t, cluster, set, done)
	})
}

// loseY takes y from the set {x, y, z}, on every node, and checks that
// the set's next Extend finds it lost, that its Done (done) closes, and that
// its Release still frees x and z.
func loseY(t *testing.T, cluster *redlocktest.Cluster, set *redlock.Locks, done <-chan struct{}) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		do(t, n, "DEL", "y")
	}
	err := set.Extend(bg, 0)
	if !errors.Is(err, redlock.ErrLockLost) || !strings.Contains(err.Error(), "1 of 3 keys not extended") {
		t.Fatalf("Extend with y gone: %v, want ErrLockLost, 1 of 3 keys", err)
	}
	waitClosed(t, done, "Done after a lock of the set was lost")
	if err := set.Err(); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Err after the loss: %v, want ErrLockLost", err)
	}
	if err := set.Locks()[0].Err(); err != nil {
		t.Errorf("x after y's loss: %v, want it still held", err)
	}
	// The set is over: a later Extend extends none of the others.
	extensions := set.Locks()[0].Extensions()
	if err := set.Extend(bg, 0); !errors.Is(err, redlock.ErrLockLost) || set.Locks()[0].Extensions() != extensions {
		t.Errorf("Extend after y's loss: %v, x extended %d times more; want ErrLockLost, none", err, set.Locks()[0].Extensions()-extensions)
	}
	if err := set.Release(bg); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Release of a set with y lost: %v, want ErrNotHeld", err)
	}
	waitForKey(t, cluster, "x", "")
	waitForKey(t, cluster, "z", "")
	if err := set.Release(bg); !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("second Release: %v, want ErrReleased", err)
	}
}

// A renewed set whose lock is lost stops renewing the others: they expire
// at their deadlines, and another client takes them, though the holder
// never releases the set.
func TestLocks_lossStopsTheOthersRenewal(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	opts := &redlock.Options{TTL: time.Second, NodeTimeout: 300 * time.Millisecond}
	holder, other := newClient(t, cluster, adapters[0], opts), newClient(t, cluster, adapters[0], opts)
	set, err := holder.AcquireAll(bg, []string{"q1", "q2"}, redlock.WithAutoRenew())
	if err != nil {
		t.Fatal(err)
	}
	defer set.Release(bg)
	if _, err := other.ForceRelease(bg, "q2", "ops"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, set.Done(), "Done after a lock of the set was taken")
	if err := set.Err(); !errors.Is(err, redlock.ErrLockLost) {
		t.Fatalf("Err after the loss: %v, want ErrLockLost", err)
	}
	// q1 expires within its TTL of its last renewal.
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	lock, err := other.Acquire(ctx, "q1")
	if err != nil {
		t.Fatalf("q1 after q2 of its set was lost: %v, want it freed by its TTL", err)
	}
	lock.Release(bg)
}

// waitClosed fails the test unless ch is closed within a few seconds.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still open", what)
	}
}

// checkUntil checks that a set's Until is its earliest lock's.
func checkUntil(t *testing.T, set *redlock.Locks) {
	t.Helper()
	var earliest time.Time
	for _, l := range set.Locks() {
		if u := l.Until(); earliest.IsZero() || u.Before(earliest) {
			earliest = u
		}
	}
	if got := set.Until(); !got.Equal(earliest) {
		t.Errorf("Until %v, want the earliest lock's %v", got, earliest)
	}
}

// Done closes on Release, and when a lock of a set that is not renewed
// expires; a renewed set outlives its TTL.
func TestLocks_doneOnReleaseAndExpiry(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, fast())
		names := []string{"p", "q"}

		set, err := client.AcquireAll(bg, names)
		if err != nil {
			t.Fatal(err)
		}
		done := set.Done()
		if err := set.Release(bg); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, done, "Done after Release")
		if err := set.Err(); !errors.Is(err, redlock.ErrReleased) {
			t.Errorf("Err after Release: %v, want ErrReleased", err)
		}
		waitForKey(t, cluster, "p", "")
		waitForKey(t, cluster, "q", "")
		checkExpiryAndRenewal(t, client, names)
	})
}

// checkExpiryAndRenewal checks that a set of names taken with a short TTL
// and not renewed expires after its TTL, and that a renewed one does not.
func checkExpiryAndRenewal(t *testing.T, client *redlock.Client, names []string) {
	t.Helper()
	const ttl = 500 * time.Millisecond
	short, err := client.AcquireAll(bg, names, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, short.Done(), "Done after the TTL of a set not renewed")
	if err := short.Err(); !errors.Is(err, redlock.ErrLockExpired) {
		t.Errorf("Err after the TTL: %v, want ErrLockExpired", err)
	}

	renewed, err := client.AcquireAll(bg, names, redlock.WithTTL(ttl), redlock.WithAutoRenew())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-renewed.Done():
		t.Fatalf("a renewed set ended: %v", renewed.Err())
	case <-time.After(3 * ttl):
	}
	for _, l := range renewed.Locks() {
		if l.Extensions() == 0 {
			t.Errorf("%s was not renewed", l.Key())
		}
	}
	if err := renewed.Release(bg); err != nil {
		t.Fatal(err)
	}
}

// On a Redis Cluster, a set whose keys lie in slots of different masters
// is acquired, excludes other sets that share a key, and is released; a
// waiting AcquireAll is woken by the release of a key in another slot.
func TestAcquireAll_redisCluster(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	names := []string{"job", "user:{42}:cart", "x", "y", "z"}
	if n := mastersOf(t, cluster, names); n < 2 {
		t.Fatalf("the keys %v are all on one master", names)
	}
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			opts := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond}
			c := clusterClient(t, cluster, a.conn, opts)
			other := clusterClient(t, cluster, a.conn, opts)
			slow := redlock.Jittered(time.Minute, time.Minute) // only a release can wake it
			waiter := clusterClient(t, cluster, a.conn, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond, Retry: slow})
			set, err := c.AcquireAll(bg, names)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range set.Locks() {
				checkHolder(t, c, l.Key(), l.Token())
			}
			if _, err := other.TryAcquireAll(bg, []string{"other", "x"}); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("a set sharing x: %v, want ErrNotAcquired", err)
			}
			checkHolder(t, c, "other", "")

			// The waiter is refused job, and tries again within its deadline
			// only if the release of job wakes it.
			type outcome struct {
				set *redlock.Locks
				err error
			}
			got := make(chan outcome, 1)
			go func() {
				ctx, cancel := context.WithTimeout(bg, 10*time.Second)
				defer cancel()
				set, err := waiter.AcquireAll(ctx, []string{"other", "job"})
				got <- outcome{set, err}
			}()
			defer func() {
				if r := <-got; r.err == nil {
					r.set.Release(bg)
				}
			}()
			// It listens for job's release once refused; a release before
			// that would leave it to its retry delay.
			awaitReleaseChannels(t, cluster, map[*redlocktest.Node][]string{cluster.NodeForKey("job"): {redlock.ReleaseChannel("job", true)}})
			if err := set.Release(bg); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"user:{42}:cart", "x", "y", "z"} {
				checkHolder(t, c, name, "")
			}
			r := <-got
			got <- r // for the deferred release
			if r.err != nil {
				t.Fatalf("the waiter was not woken by the release of job: %v", r.err)
			}
			for _, l := range r.set.Locks() {
				checkHolder(t, c, l.Key(), l.Token())
			}
		})
	}
}

// mastersOf returns how many masters of the Redis Cluster cluster serve
// the slots of keys.
func mastersOf(t *testing.T, cluster *redlocktest.Cluster, keys []string) int {
	t.Helper()
	masters := map[int]bool{}
	for _, key := range keys {
		slot, err := strconv.Atoi(do(t, cluster.Node(0), "CLUSTER", "KEYSLOT", key))
		if err != nil {
			t.Fatal(err)
		}
		m, err := cluster.MasterOf(bg, slot)
		if err != nil {
			t.Fatal(err)
		}
		masters[m.Index()] = true
	}
	return len(masters)
}

// checkHolder checks that the one node of a Redis Cluster client holds key
// with token ("" for none).
func checkHolder(t *testing.T, c *redlock.Client, key, token string) {
	t.Helper()
	states, err := c.Inspect(bg, key)
	if err != nil || states[0].Err != nil || states[0].Holder != token {
		t.Errorf("%q: Inspect %+v, %v; want holder %q", key, states, err, token)
	}
}

// A set refused for a key held elsewhere reports that key, even where
// another key of the set only met nodes that did not answer: its error
// says what keeps the set out.
func TestTryAcquireAll_errorNamesTheHeldKey(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	other := newClient(t, cluster, adapters[0], fast())
	held, err := holder.Acquire(bg, "set-b")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)
	// Acquire returned at a quorum: every node holds set-b before the
	// pauses, node 0 to refuse it below.
	waitForKey(t, cluster, "set-b", held.Token())
	for _, n := range cluster.Nodes()[1:] {
		if err := n.Pause(); err != nil {
			t.Fatal(err)
		}
		defer n.Resume()
	}
	// set-a is granted by node 0 alone and times out on the others;
	// set-b is held on node 0.
	_, err = other.TryAcquireAll(bg, []string{"set-a", "set-b"})
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Key != "set-b" {
		t.Fatalf("TryAcquireAll with set-b held and two nodes of three paused: %v, want the QuorumError of set-b", err)
	}
	if got := qe.Nodes[0].Outcome; got != redlock.OutcomeHeld {
		t.Errorf("node 0 for set-b: %v, want held", got)
	}
}

// Bad input fails at once, before any request, and writes nothing.
func TestAcquireAll_badInput(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	client := newClient(t, cluster, adapters[0], fast())
	var many []string
	for i := range 65 {
		many = append(many, "k"+strconv.Itoa(i))
	}
	for _, c := range []struct {
		name  string
		names []string
		opts  []redlock.LockOption
		want  error
	}{
		{"no name", nil, nil, redlock.ErrInvalidKey},
		{"empty list", []string{}, nil, redlock.ErrInvalidKey},
		{"listed twice", []string{"k1", "k2", "k1"}, nil, redlock.ErrInvalidKey},
		{"65 names", many, nil, redlock.ErrInvalidKey},
		{"empty name", []string{"k1", ""}, nil, redlock.ErrInvalidKey},
		{"reserved name", []string{"k1", redlock.MarkerKey}, nil, redlock.ErrInvalidKey},
		{"WithLimit", []string{"k1", "k2"}, []redlock.LockOption{redlock.WithLimit(2)}, redlock.ErrInvalidOptions},
		{"TTL", []string{"k1", "k2"}, []redlock.LockOption{redlock.WithTTL(time.Hour)}, redlock.ErrInvalidTTL},
	} {
		if _, err := client.AcquireAll(bg, c.names, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("AcquireAll, %s: %v, want %v", c.name, err, c.want)
		}
		if _, err := client.TryAcquireAll(bg, c.names, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("TryAcquireAll, %s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := client.AcquireAll(bg, []string{"k1", "k2", "k1"}); err == nil || !strings.Contains(err.Error(), `"k1" listed twice`) {
		t.Errorf("a name listed twice: %v, want it named", err)
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if _, err := client.AcquireAll(nil, []string{"k1"}); err == nil || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("AcquireAll(nil): %v, want a nil context error", err)
	}
	//lint:ignore SA1012 as above
	if _, err := client.TryAcquireAll(nil, []string{"k1"}); err == nil || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("TryAcquireAll(nil): %v, want a nil context error", err)
	}
	if keys := do(t, cluster.Node(0), "KEYS", "k*"); keys != "" {
		t.Errorf("keys left on the node after bad calls: %s", keys)
	}
	set, err := client.AcquireAll(bg, many[:64])
	if err != nil {
		t.Fatalf("64 names: %v", err)
	}
	//lint:ignore SA1012 as above
	if err := set.Extend(nil, 0); err == nil {
		t.Error("Extend(nil) succeeded")
	}
	//lint:ignore SA1012 a release runs whatever its context
	if err := set.Release(nil); err != nil {
		t.Errorf("Release(nil): %v", err)
	}
}

// An AcquireAll that gives up when its context ends says so in its
// message, as errors.Is does.
func TestAcquireAll_gaveUpSaysWhy(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	waiter := newClient(t, cluster, adapters[1], fast())
	l, err := holder.TryAcquire(bg, "b", redlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(bg)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	_, err = waiter.AcquireAll(ctx, []string{"a", "b"})
	wantGaveUp(t, err, context.DeadlineExceeded)
}

// Done called first once the set was released returns a channel closed
// already, as Lock.Done does; many times over, as it used to close later
// in some runs only.
func TestLocks_doneFirstCalledAfterRelease(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	for i := range 50 {
		set, err := client.AcquireAll(bg, []string{"d1", "d2"})
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Release(bg); err != nil {
			t.Fatal(err)
		}
		select {
		case <-set.Locks()[0].Done():
		default:
			t.Fatalf("round %d: Lock.Done open right after Release", i)
		}
		select {
		case <-set.Done():
		default:
			t.Fatalf("round %d: Locks.Done open right after Release", i)
		}
	}
}

// A waiter for a set is served although clients that take its keys one at
// a time keep some of them held at every moment: the nodes queue it on
// each key, and keep each key free for it once its holder releases it,
// until it has them all. Without that, it only wins when its attempt meets
// every key free at once, which hardly ever happens.
func TestAcquireAll_notStarvedByOverlappingSets(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// Two clients relay each key, each holding it 20 ms at a time and
	// asking again as soon as it released it.
	for i, name := range []string{"a", "b", "a", "b", "c", "c"} {
		client := newClient(t, cluster, adapters[i%2], fast())
		wg.Go(func() {
			for ctx.Err() == nil {
				set, err := client.AcquireAll(ctx, []string{name})
				if err != nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
				set.Release(bg)
			}
		})
	}
	var waiters sync.WaitGroup
	for i := range 2 {
		client := newClient(t, cluster, adapters[i%2], fast())
		waiters.Go(func() {
			for range 3 {
				callCtx, stop := context.WithTimeout(ctx, 2*time.Second)
				start := time.Now()
				set, err := client.AcquireAll(callCtx, []string{"a", "b", "c"})
				stop()
				if err != nil {
					t.Errorf("AcquireAll of {a, b, c} gave up after %v: %v", time.Since(start).Round(time.Millisecond), err)
					return
				}
				if err := set.Release(bg); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		})
	}
	waiters.Wait()
}

// A set granted at its first attempt never queues: no node keeps it as a
// waiter for its keys, nor marks them waited for, so Inspect and list show
// nobody waiting and its release reads no queue.
func TestAcquireAll_grantedAtOnceNeverQueues(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, fast())
		keys := []string{"x", "y", "z"}
		set, err := client.AcquireAll(bg, keys, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range keys {
			states, err := client.Inspect(bg, key)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range states {
				if st.Waiting != 0 {
					t.Errorf("node %d shows %d waiting for %q, held by the set granted at once", i, st.Waiting, key)
				}
			}
			for i := range 3 {
				if mark := keyOn(t, cluster.Node(i), redlock.WaitingKey(key)); mark != "" {
					t.Errorf("node %d marks %q as waited for (%q)", i, key, mark)
				}
			}
		}
		if err := set.Release(bg); err != nil {
			t.Fatal(err)
		}
	})
}

// Concurrent Release calls on one set: exactly one succeeds, and the
// others fail with ErrReleased, as they would one after the other.
func TestLocks_concurrentReleases(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	for round := range 20 {
		set, err := client.AcquireAll(bg, []string{"a", "b", "c"})
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = set.Release(bg) })
		}
		wg.Wait()
		succeeded := 0
		for _, err := range errs {
			switch {
			case err == nil:
				succeeded++
			case !errors.Is(err, redlock.ErrReleased):
				t.Fatalf("round %d: a concurrent Release failed with %v, want nil or ErrReleased", round, err)
			}
		}
		if succeeded != 1 {
			t.Fatalf("round %d: %d of 3 concurrent Release calls succeeded, want 1: %v", round, succeeded, errs)
		}
	}
}

// A goroutine waiting in AcquireAll for a held key keeps no other
// AcquireAll of its Client waiting whose set shares no key with it: not
// one for free keys, nor one of the goroutine that holds the key waited
// for, which would never release it. Before, every AcquireAll of a Client
// waited for the one under way: the first waited 10 s for free keys, the
// second deadlocked.
func TestAcquireAll_disjointSetsOfOneClientDoNotWaitForEachOther(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	other := newClient(t, cluster, adapters[0], fast())
	c := newClient(t, cluster, adapters[0], fast())
	waiting := func(key string) {
		t.Helper()
		eventually(t, "a set waiter queued for "+key+" on a quorum", func() bool {
			states, err := c.Inspect(bg, key)
			if err != nil {
				return false
			}
			n := 0
			for _, st := range states {
				if st.Err == nil && st.Waiting > 0 {
					n++
				}
			}
			return n >= 2
		})
	}
	wantSet := func(keys ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		defer cancel()
		set, err := c.AcquireAll(ctx, keys)
		if err != nil {
			t.Fatalf("AcquireAll of %v, free keys, while a set of the same Client waits: %v", keys, err)
		}
		set.Release(bg)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	// Held past the test: a key that expired would end the waits.
	held, err := other.TryAcquire(bg, "acct:1", redlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(bg)
	wg.Go(func() { c.AcquireAll(ctx, []string{"acct:1", "acct:2"}) })
	waiting("acct:1")
	wantSet("acct:7", "acct:9")

	mine, err := c.TryAcquire(bg, "order:1", redlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Release(bg)
	wg.Go(func() { c.AcquireAll(ctx, []string{"order:1", "z"}) })
	waiting("order:1")
	wantSet("x", "y")
}

// A waiter for a set is not kept from its free keys by a client that died
// while first in their queues (its places here are written by hand, and
// last an hour): the releases name the dead client first and the waiter
// second, which tries a node timeout later and does not defer to a client
// that let its turn pass. Its retry delay is a minute: only that wake-up
// can serve it in time.
func TestAcquireAll_aDeadFirstInLineLetsTheSecondServe(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		keys := []string{"a", "b"}
		held, err := newClient(t, cluster, a, fast()).TryAcquireAll(bg, keys, redlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		const ghost = "ghost-client"
		for _, key := range keys {
			queueGhost(t, cluster, key, ghost)
		}
		w := newClient(t, cluster, a, slowWaiter())
		got := acquireAllInBackground(t, w, keys, 20*time.Second)
		awaitQueues(t, cluster, keys, []string{ghost, w.ID()})
		awaitListening(t, cluster, w, keys)
		if err := held.Release(bg); err != nil {
			t.Fatal(err)
		}
		select {
		case set := <-got:
			if set == nil {
				t.FailNow()
			}
			set.Release(bg)
		case <-time.After(10 * time.Second):
			t.Fatal("the released keys were kept for a dead client first in line")
		}
	})
}

// acquireAllInBackground takes names with c.AcquireAll, with a deadline of
// within, and sends the set, nil on failure.
func acquireAllInBackground(t *testing.T, c *redlock.Client, names []string, within time.Duration) chan *redlock.Locks {
	got := make(chan *redlock.Locks, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, within)
		defer cancel()
		set, err := c.AcquireAll(ctx, names)
		if err != nil {
			t.Errorf("%s: AcquireAll: %v", c.ID(), err)
		}
		got <- set
	}()
	return got
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// countingConn counts the requests sent to one node.
type countingConn struct {
	redlock.Conn
	requests atomic.Int64
}

func (c *countingConn) Do(ctx context.Context, args ...string) (any, error) {
	c.requests.Add(1)
	return c.Conn.Do(ctx, args...)
}

func (c *countingConn) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	c.requests.Add(1)
	return c.Conn.EvalSHA(ctx, sha1, source, keys, args...)
}

// countingClient returns a Client over every node of cluster whose requests
// are counted per node, with the nodes marked ready.
func countingClient(t testing.TB, cluster *redlocktest.Cluster, opts *redlock.Options) (*redlock.Client, []*countingConn) {
	t.Helper()
	var conns []redlock.Conn
	var counted []*countingConn
	for _, c := range goredisConns(t, cluster.Addrs()) {
		cc := &countingConn{Conn: c}
		conns = append(conns, cc)
		counted = append(counted, cc)
	}
	client, err := redlock.New(conns, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if err := client.MarkReady(bg); err != nil {
		t.Fatal(err)
	}
	loadScripts(t, cluster)
	return client, counted
}

// requestsSince waits until the nodes received want requests in all since
// before (late nodes get theirs after the caller returned), then returns each
// node's count since before.
func requestsSince(t testing.TB, conns []*countingConn, before []int64, want int64) []int64 {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got, total := make([]int64, len(conns)), int64(0)
		for i, c := range conns {
			got[i] = c.requests.Load() - before[i]
			total += got[i]
		}
		if total >= want || time.Now().After(deadline) {
			time.Sleep(20 * time.Millisecond) // let any surplus request show
			for i, c := range conns {
				got[i] = c.requests.Load() - before[i]
			}
			return got
		}
		time.Sleep(time.Millisecond)
	}
}

// quiet waits until no node has received a request for a while.
func quiet(conns []*countingConn) {
	last := snapshot(conns)
	for range 100 {
		time.Sleep(30 * time.Millisecond)
		now := snapshot(conns)
		if slices.Equal(now, last) {
			return
		}
		last = now
	}
}

func snapshot(conns []*countingConn) []int64 {
	n := make([]int64, len(conns))
	for i, c := range conns {
		n[i] = c.requests.Load()
	}
	return n
}

// counterOn returns the fencing counter of key on node n, 0 when absent.
func counterOn(t testing.TB, n *redlocktest.Node, key string) uint64 {
	t.Helper()
	v := keyOn(t, n, redlock.FenceKey(key))
	if v == "" {
		return 0
	}
	f, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("node %d: fencing counter %q: %v", n.Index(), v, err)
	}
	return f
}

func TestFence_increasesAcrossClients(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
		const workers, rounds = 4, 12
		keys := []string{"fenced-a", "fenced-b"}
		var mu sync.Mutex
		seen := map[string][]uint64{} // per key, in the order the lock was held
		var wg sync.WaitGroup
		for w := range workers {
			client := newClient(t, cluster, a, &redlock.Options{TTL: 5 * time.Second, NodeTimeout: time.Second,
				Retry: redlock.Jittered(time.Millisecond, 5*time.Millisecond)})
			wg.Go(func() {
				for r := range rounds {
					key := keys[(w+r)%len(keys)]
					lock, err := client.Acquire(bg, key)
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
					// Appended while the lock is held: the order is the
					// order of ownership.
					mu.Lock()
					seen[key] = append(seen[key], lock.Fence())
					mu.Unlock()
					if err := lock.Release(bg); err != nil {
						t.Errorf("worker %d: release: %v", w, err)
					}
				}
			})
		}
		wg.Wait()
		total := 0
		for key, fences := range seen {
			total += len(fences)
			for i := 1; i < len(fences); i++ {
				if fences[i] <= fences[i-1] {
					t.Errorf("%s: fence %d after %d (acquisition %d): not strictly increasing", key, fences[i], fences[i-1], i)
				}
			}
			if fences[0] == 0 {
				t.Errorf("%s: first fence is 0", key)
			}
		}
		if total != workers*rounds {
			t.Errorf("%d acquisitions recorded, want %d", total, workers*rounds)
		}
	})
}

func TestFence_afterAllNodesLoseData(t *testing.T) {
	for _, quarantine := range []bool{true, false} {
		name := "markReady"
		if !quarantine {
			name = "quarantineOff"
		}
		t.Run(name, func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
			opts := fast()
			opts.DisableQuarantine = !quarantine
			client := newClient(t, cluster, adapters[0], opts)
			var last uint64
			for range 3 {
				lock, err := client.TryAcquire(bg, "wiped")
				if err != nil {
					t.Fatal(err)
				}
				if lock.Fence() <= last {
					t.Fatalf("fence %d after %d", lock.Fence(), last)
				}
				last = lock.Fence()
				lock.Release(bg)
			}
			before := uint64(time.Now().UnixMicro())
			for _, n := range cluster.Nodes() {
				if err := n.Restart(bg); err != nil {
					t.Fatal(err)
				}
				if v := keyOn(t, n, redlock.FenceKey("wiped")); v != "" {
					t.Fatalf("node %d kept its counter across a restart without persistence: %q", n.Index(), v)
				}
			}
			if quarantine {
				_, err := client.TryAcquire(bg, "wiped")
				if !errors.Is(err, redlock.ErrNotAcquired) {
					t.Fatalf("every node restarted empty: err = %v, want ErrNotAcquired", err)
				}
				if n := countOutcomes(quorumError(t, err))[redlock.OutcomeRecovering]; n < 2 {
					t.Fatalf("%d nodes recovering, want at least 2: %v", n, err)
				}
				if err := client.MarkReady(bg); err != nil {
					t.Fatal(err)
				}
			}
			lock, err := client.TryAcquire(bg, "wiped")
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Release(bg)
			if lock.Fence() <= last {
				t.Errorf("fence %d after every node lost its data, not above the earlier %d", lock.Fence(), last)
			}
			// A recreated counter starts from the node's clock.
			if lock.Fence() < before {
				t.Errorf("fence %d is below the time of the restart, %d µs", lock.Fence(), before)
			}
		})
	}
}

func TestFence_raisesLaggards(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	client, conns := countingClient(t, cluster, fast())
	const key = "laggard"
	acquire := func(step string) *redlock.Lock {
		t.Helper()
		lock, err := client.TryAcquire(bg, key)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return lock
	}
	release := func(lock *redlock.Lock) {
		t.Helper()
		if err := lock.Release(bg); err != nil {
			t.Fatal(err)
		}
		quiet(conns) // the last nodes' releases are not waited for
	}
	setOn := func(value string, nodes ...int) {
		t.Helper()
		for _, i := range nodes {
			var err error
			if value == "" {
				_, err = cluster.Node(i).Do(bg, "DEL", key)
			} else {
				_, err = cluster.Node(i).Do(bg, "SET", key, value, "PX", "60000")
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	wantCounters := func(step string, want uint64, nodes ...int) {
		t.Helper()
		for _, i := range nodes {
			if got := counterOn(t, cluster.Node(i), key); got != want {
				t.Errorf("%s: node %d counter %d, want %d", step, i, got, want)
			}
		}
	}
	wantRequests := func(step string, got []int64, want ...int64) {
		t.Helper()
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: node %d got %d requests, want %d", step, i, got[i], want[i])
			}
		}
	}

	// A new key: every node starts its counter from the caller's clock, so
	// they agree at once and the acquisition costs one request per node.
	now := uint64(time.Now().UnixMicro())
	before := snapshot(conns)
	first := acquire("new key")
	wantRequests("new key", requestsSince(t, conns, before, 5), 1, 1, 1, 1, 1)
	if first.Fence() < now {
		t.Errorf("first fence %d, want at least the caller's clock %d µs", first.Fence(), now)
	}
	release(first)
	wantCounters("new key", first.Fence(), 0, 1, 2, 3, 4)

	// Nodes that missed an acquisition catch up with the next one.
	setOn("someone-else", 3, 4)
	missed := acquire("nodes 3 and 4 held by someone else")
	release(missed)
	setOn("", 3, 4)
	wantCounters("3 and 4 missed one", first.Fence(), 3, 4)
	before = snapshot(conns)
	caught := acquire("catching up")
	wantRequests("catching up", requestsSince(t, conns, before, 5), 1, 1, 1, 1, 1)
	release(caught)
	if caught.Fence() <= missed.Fence() || missed.Fence() <= first.Fence() {
		t.Errorf("fences %d, %d, %d: not increasing", first.Fence(), missed.Fence(), caught.Fence())
	}
	wantCounters("caught up", caught.Fence(), 0, 1, 2, 3, 4)

	// Counters ahead of this client's clock, as a client whose clock runs
	// an hour fast leaves them: they grow by one per acquisition.
	base := uint64(time.Now().Add(time.Hour).UnixMicro())
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "SET", redlock.FenceKey(key), strconv.FormatUint(base, 10)); err != nil {
			t.Fatal(err)
		}
	}
	before = snapshot(conns)
	agreed := acquire("agreeing nodes")
	wantRequests("agreeing nodes", requestsSince(t, conns, before, 5), 1, 1, 1, 1, 1)
	if agreed.Fence() != base+1 {
		t.Errorf("fence %d, want %d", agreed.Fence(), base+1)
	}
	release(agreed)

	// Nodes 3 and 4 miss three acquisitions: the granting nodes still
	// agree, so nothing is raised.
	setOn("someone-else", 3, 4)
	for range 3 {
		before = snapshot(conns)
		lock := acquire("nodes 3 and 4 held by someone else")
		wantRequests("nodes 3 and 4 held", requestsSince(t, conns, before, 5), 1, 1, 1, 1, 1)
		release(lock)
	}
	wantCounters("after 3 and 4 missed three", base+4, 0, 1, 2)
	wantCounters("after 3 and 4 missed three", base+1, 3, 4)
	setOn("", 3, 4)

	// Q1 = {2, 3, 4}: node 2 is ahead, and the others are raised to it.
	setOn("someone-else", 0, 1)
	before = snapshot(conns)
	q1 := acquire("quorum 2, 3, 4")
	wantRequests("raise", requestsSince(t, conns, before, 9), 2, 2, 1, 2, 2)
	if q1.Fence() != base+5 {
		t.Errorf("fence %d, want the largest counter plus one, %d", q1.Fence(), base+5)
	}
	wantCounters("after the raise", base+5, 0, 1, 2, 3, 4)
	release(q1)
	setOn("", 0, 1)

	// Q2 = {0, 1, 3, 4} meets Q1 only in raised nodes: without the raise
	// its largest counter would be base+4+1, q1's fence again.
	setOn("someone-else", 2)
	q2 := acquire("quorum 0, 1, 3, 4")
	if q2.Fence() <= q1.Fence() {
		t.Errorf("fence %d after %d: the next quorum did not see the raised counters", q2.Fence(), q1.Fence())
	}
	release(q2)

	// The counter expires FenceTTL after its last use.
	pttl, err := cluster.Node(0).Do(bg, "PTTL", redlock.FenceKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if ms, _ := strconv.ParseInt(pttl, 10, 64); ms <= (redlock.FenceTTL - time.Minute).Milliseconds() {
		t.Errorf("counter PTTL %s ms, want about %s", pttl, redlock.FenceTTL)
	}
}

func TestFence_raiseNeedsTheLock(t *testing.T) {
	// Counters written by someone else are not trusted blindly: a counter
	// that is not an integer is a node error, and the lock key is left alone.
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	if _, err := cluster.Node(0).Do(bg, "SET", redlock.FenceKey("bad"), "not-a-number"); err != nil {
		t.Fatal(err)
	}
	lock, err := client.TryAcquire(bg, "bad")
	if err != nil {
		t.Fatalf("one bad counter of 3: %v", err)
	}
	defer lock.Release(bg)
	if v := keyOn(t, cluster.Node(0), "bad"); v != "" {
		t.Errorf("node 0 took the lock over a corrupt counter: %q", v)
	}
	if v := keyOn(t, cluster.Node(0), redlock.FenceKey("bad")); v != "not-a-number" {
		t.Errorf("node 0 counter overwritten: %q", v)
	}
}

func TestFence_reservedKeys(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	client := newClient(t, cluster, adapters[0], fast())
	for _, key := range []string{redlock.MarkerKey, redlock.FenceKey("x"), redlock.FenceKey("")} {
		if _, err := client.TryAcquire(bg, key); !errors.Is(err, redlock.ErrInvalidKey) {
			t.Errorf("lock on %q: err = %v, want ErrInvalidKey", key, err)
		}
	}
	if v := keyOn(t, cluster.Node(0), redlock.MarkerKey); v != "0" {
		t.Errorf("marker = %q after a refused lock on it", v)
	}
	// A redsync-style name in the same namespace is fine.
	lock, err := client.TryAcquire(bg, "redlock:orders")
	if err != nil {
		t.Fatal(err)
	}
	lock.Release(bg)
}

// BenchmarkFence_acquireRelease measures an acquire and release cycle on one
// key with 5 nodes, and reports the requests each node gets per cycle: 2 on
// the common path, where the granting nodes agree on the fencing counter.
// The baseline does the same with the plain SET NX PX that the acquire script
// replaces, to show what the script costs.
func BenchmarkFence_acquireRelease(b *testing.B) {
	cluster := redlocktest.Start(b, redlocktest.Options{Nodes: 5})
	b.Run("fenced", func(b *testing.B) {
		client, conns := countingClient(b, cluster, &redlock.Options{NodeTimeout: time.Second})
		warm, err := client.TryAcquire(bg, "bench")
		if err != nil {
			b.Fatal(err)
		}
		warm.Release(bg)
		before := snapshot(conns)
		b.ResetTimer()
		for b.Loop() {
			lock, err := client.TryAcquire(bg, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := lock.Release(bg); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		after := requestsSince(b, conns, before, 0)
		var total int64
		for _, n := range after {
			total += n
		}
		b.ReportMetric(float64(total)/float64(len(conns))/float64(b.N), "requests/node/op")
	})
	b.Run("baseline-setnx", func(b *testing.B) {
		conns := goredisConns(b, cluster.Addrs())
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for i := 0; b.Loop(); i++ {
			token := fmt.Sprint("t", i)
			var wg sync.WaitGroup
			var ok atomic.Int32
			for _, c := range conns {
				wg.Go(func() {
					if v, err := c.Do(bg, "SET", "bench-plain", token, "NX", "PX", "10000"); err == nil && v == "OK" {
						ok.Add(1)
					}
				})
			}
			wg.Wait()
			if ok.Load() < 3 {
				b.Fatal("baseline: no quorum")
			}
			for _, c := range conns {
				wg.Go(func() { c.Do(bg, "DEL", "bench-plain") })
			}
			wg.Wait()
		}
	})
}

func TestFence_clientClockBehind(t *testing.T) {
	// The acquire script run directly, as by a client whose clock is far
	// behind: the node's own clock keeps a new counter near the present.
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	eval := func(key, token, hint string) []string {
		t.Helper()
		v, err := node.Do(bg, "EVAL", redlock.AcquireScriptSource, "3", key, redlock.FenceKey(key), redlock.MarkerKey,
			token, "10000", "0", "60000", hint)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(v, "\n")
	}
	now := time.Now()
	got := eval("behind", "t1", "1")
	fence, err := strconv.ParseUint(got[1], 10, 64)
	if got[0] != "1" || err != nil {
		t.Fatalf("reply %q", got)
	}
	if low, high := uint64(now.Add(-2*time.Second).UnixMicro()), uint64(now.UnixMicro()); fence < low || fence > high {
		t.Errorf("fence %d from a client an era behind, want the node's clock, in [%d, %d]", fence, low, high)
	}
	// A counter above the node's clock grows by one.
	if _, err := node.Do(bg, "SET", redlock.FenceKey("ahead"), "99999999999999990"); err != nil {
		t.Fatal(err)
	}
	if got := eval("ahead", "t2", strconv.FormatInt(now.UnixMicro(), 10)); got[1] != "99999999999999991" {
		t.Errorf("counter above every clock: reply %q, want 99999999999999991", got)
	}
	// A held key: nothing changes.
	if got := eval("ahead", "t3", "1"); got[0] != "0" || keyOn(t, node, redlock.FenceKey("ahead")) != "99999999999999991" {
		t.Errorf("held key: reply %q", got)
	}
}

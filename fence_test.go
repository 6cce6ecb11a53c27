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
	if err := client.MarkReady(bg, false); err != nil {
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
			last := acquireIncreasingFences(t, client, "wiped", 3)
			before := uint64(time.Now().UnixMicro())
			restartAllEmpty(t, cluster, "wiped")
			if quarantine {
				wantAllRecovering(t, client, "wiped")
				// Forced: this client's own grants show the nodes are not
				// new, and an operator who knows they were wiped says so.
				if err := client.MarkReady(bg, true); err != nil {
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

// acquireIncreasingFences acquires and releases key n times, fails the test
// unless each fencing token is above the one before, and returns the last.
func acquireIncreasingFences(t *testing.T, client *redlock.Client, key string, n int) uint64 {
	t.Helper()
	var last uint64
	for range n {
		lock, err := client.TryAcquire(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		if lock.Fence() <= last {
			t.Fatalf("fence %d after %d", lock.Fence(), last)
		}
		last = lock.Fence()
		lock.Release(bg)
	}
	return last
}

// restartAllEmpty restarts every node of cluster, and fails the test unless
// each lost the fencing counter of key.
func restartAllEmpty(t *testing.T, cluster *redlocktest.Cluster, key string) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		if err := n.Restart(bg); err != nil {
			t.Fatal(err)
		}
		if v := keyOn(t, n, redlock.FenceKey(key)); v != "" {
			t.Fatalf("node %d kept its counter across a restart without persistence: %q", n.Index(), v)
		}
	}
}

// wantAllRecovering fails the test unless an acquisition of key is refused
// because at least 2 of the nodes are recovering.
func wantAllRecovering(t *testing.T, client *redlock.Client, key string) {
	t.Helper()
	_, err := client.TryAcquire(bg, key)
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("every node restarted empty: err = %v, want ErrNotAcquired", err)
	}
	if n := countOutcomes(quorumError(t, err))[redlock.OutcomeRecovering]; n < 2 {
		t.Fatalf("%d nodes recovering, want at least 2: %v", n, err)
	}
}

func TestFence_raisesLaggards(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	client, conns := countingClient(t, cluster, fast())
	f := &laggards{cluster: cluster, client: client, conns: conns}

	// A new key: every node starts its counter from the caller's clock, so
	// they agree at once and the acquisition costs one request per node.
	now := uint64(time.Now().UnixMicro())
	before := snapshot(conns)
	first := f.acquire(t, "new key")
	wantRequestsPerNode(t, "new key", requestsSince(t, conns, before, 5), 1, 1, 1, 1, 1)
	if first.Fence() < now {
		t.Errorf("first fence %d, want at least the caller's clock %d µs", first.Fence(), now)
	}
	f.release(t, first)
	f.wantCounters(t, "new key", first.Fence(), 0, 1, 2, 3, 4)

	// Nodes that missed an acquisition catch up with the next one.
	f.setOn(t, "someone-else", 3, 4)
	missed := f.acquire(t, "nodes 3 and 4 held by someone else")
	f.release(t, missed)
	f.setOn(t, "", 3, 4)
	f.wantCounters(t, "3 and 4 missed one", first.Fence(), 3, 4)
	before = snapshot(conns)
	caught := f.acquire(t, "catching up")
	wantRequestsPerNode(t, "catching up", requestsSince(t, conns, before, 5), 1, 1, 1, 1, 1)
	f.release(t, caught)
	if caught.Fence() <= missed.Fence() || missed.Fence() <= first.Fence() {
		t.Errorf("fences %d, %d, %d: not increasing", first.Fence(), missed.Fence(), caught.Fence())
	}
	f.wantCounters(t, "caught up", caught.Fence(), 0, 1, 2, 3, 4)

	// Counters ahead of this client's clock, as a client whose clock runs
	// an hour fast leaves them: they grow by one per acquisition.
	base := uint64(time.Now().Add(time.Hour).UnixMicro())
	f.setCounters(t, base)
	before = snapshot(conns)
	agreed := f.acquire(t, "agreeing nodes")
	wantRequestsPerNode(t, "agreeing nodes", requestsSince(t, conns, before, 5), 1, 1, 1, 1, 1)
	if agreed.Fence() != base+1 {
		t.Errorf("fence %d, want %d", agreed.Fence(), base+1)
	}
	f.release(t, agreed)

	// Nodes 3 and 4 miss three acquisitions: the granting nodes still
	// agree, so nothing is raised.
	f.setOn(t, "someone-else", 3, 4)
	for range 3 {
		before = snapshot(conns)
		lock := f.acquire(t, "nodes 3 and 4 held by someone else")
		wantRequestsPerNode(t, "nodes 3 and 4 held", requestsSince(t, conns, before, 5), 1, 1, 1, 1, 1)
		f.release(t, lock)
	}
	f.wantCounters(t, "after 3 and 4 missed three", base+4, 0, 1, 2)
	f.wantCounters(t, "after 3 and 4 missed three", base+1, 3, 4)
	f.setOn(t, "", 3, 4)

	// Q1 = {2, 3, 4}: node 2 is ahead, and the others are raised to it.
	f.setOn(t, "someone-else", 0, 1)
	before = snapshot(conns)
	q1 := f.acquire(t, "quorum 2, 3, 4")
	wantRequestsPerNode(t, "raise", requestsSince(t, conns, before, 9), 2, 2, 1, 2, 2)
	if q1.Fence() != base+5 {
		t.Errorf("fence %d, want the largest counter plus one, %d", q1.Fence(), base+5)
	}
	f.wantCounters(t, "after the raise", base+5, 2, 3, 4)
	// Nodes 0 and 1 keep their holder's counter, which Check and an
	// election's Leader read as that holder's fencing token.
	f.wantCounters(t, "held by someone else", base+4, 0, 1)
	f.release(t, q1)
	f.setOn(t, "", 0, 1)

	// Q2 = {0, 1, 3, 4} meets Q1 only in raised nodes: without the raise
	// its largest counter would be base+4+1, q1's fence again.
	f.setOn(t, "someone-else", 2)
	q2 := f.acquire(t, "quorum 0, 1, 3, 4")
	if q2.Fence() <= q1.Fence() {
		t.Errorf("fence %d after %d: the next quorum did not see the raised counters", q2.Fence(), q1.Fence())
	}
	f.release(t, q2)

	// The counter expires the TTL plus the recovery delay after its last use.
	f.wantCounterTTL(t, 0)
}

// laggards is TestFence_raisesLaggards' cluster and client, whose requests
// are counted per node, and the steps and checks it takes on its one key.
type laggards struct {
	cluster *redlocktest.Cluster
	client  *redlock.Client
	conns   []*countingConn
}

// laggardKey is the lock TestFence_raisesLaggards takes.
const laggardKey = "laggard"

// acquire takes the lock, or fails the test with step.
func (f *laggards) acquire(t *testing.T, step string) *redlock.Lock {
	t.Helper()
	lock, err := f.client.TryAcquire(bg, laggardKey)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return lock
}

// release releases lock and waits until the last nodes' releases arrived:
// they are not waited for.
func (f *laggards) release(t *testing.T, lock *redlock.Lock) {
	t.Helper()
	if err := lock.Release(bg); err != nil {
		t.Fatal(err)
	}
	quiet(f.conns)
}

// setOn sets the lock key to value on nodes, for a minute, or deletes it
// there if value is "".
func (f *laggards) setOn(t *testing.T, value string, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		var err error
		if value == "" {
			_, err = f.cluster.Node(i).Do(bg, "DEL", laggardKey)
		} else {
			_, err = f.cluster.Node(i).Do(bg, "SET", laggardKey, value, "PX", "60000")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// setCounters sets the fencing counter to value on every node.
func (f *laggards) setCounters(t *testing.T, value uint64) {
	t.Helper()
	for _, n := range f.cluster.Nodes() {
		if _, err := n.Do(bg, "SET", redlock.FenceKey(laggardKey), strconv.FormatUint(value, 10)); err != nil {
			t.Fatal(err)
		}
	}
}

// wantCounters fails the test unless the fencing counter is want on nodes.
func (f *laggards) wantCounters(t *testing.T, step string, want uint64, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		if got := counterOn(t, f.cluster.Node(i), laggardKey); got != want {
			t.Errorf("%s: node %d counter %d, want %d", step, i, got, want)
		}
	}
}

// wantRequestsPerNode fails the test unless got[i], the requests node i
// got, is want[i] for every node.
func wantRequestsPerNode(t *testing.T, step string, got []int64, want ...int64) {
	t.Helper()
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: node %d got %d requests, want %d", step, i, got[i], want[i])
		}
	}
}

// wantCounterTTL fails the test unless the fencing counter on node i
// expires about the lock's TTL plus the recovery delay (2 s + 30 s with
// fast()) from now: no longer, so that nothing piles up.
func (f *laggards) wantCounterTTL(t *testing.T, i int) {
	t.Helper()
	pttl, err := f.cluster.Node(i).Do(bg, "PTTL", redlock.FenceKey(laggardKey))
	if err != nil {
		t.Fatal(err)
	}
	want := fast().TTL + 30*time.Second
	if ms, _ := strconv.ParseInt(pttl, 10, 64); ms <= (want-5*time.Second).Milliseconds() || ms > want.Milliseconds() {
		t.Errorf("counter PTTL %s ms, want about %s", pttl, want)
	}
}

func TestFence_raiseOnALostCounterStartsAtTheNodeClock(t *testing.T) {
	// A counter that vanished after the caller's grant (the node's clock
	// jumped past its TTL) may have handed out later tokens than the
	// caller's before it went: a raise there starts it again where an
	// acquisition would, from the node's clock, not from the caller's
	// older token, or the node would hand those tokens out again.
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	raise := func(key, fence string) {
		t.Helper()
		if _, err := node.Do(bg, "EVAL", redlock.RaiseScriptSource, "2", key, redlock.FenceKey(key), "token", fence, "60000"); err != nil {
			t.Fatal(err)
		}
	}
	secs, err := node.Do(bg, "EVAL", "return redis.call('TIME')[1]", "0")
	if err != nil {
		t.Fatal(err)
	}
	clock, _ := strconv.ParseUint(secs, 10, 64)
	floor := (clock - 1) * 1_000_000

	old := strconv.FormatUint(floor-5_000_000, 10) // five seconds behind the node's clock
	raise("lost", old)
	if got := counterOn(t, node, "lost"); got < floor {
		t.Errorf("absent counter raised to %d, below the node's clock %d: want at least %d", got, clock*1_000_000, floor)
	}

	// A counter that is there is raised to the token exactly, however far
	// behind the clock it is: it has handed out nothing above itself.
	if _, err := node.Do(bg, "SET", redlock.FenceKey("kept"), "1"); err != nil {
		t.Fatal(err)
	}
	raise("kept", old)
	if got := counterOn(t, node, "kept"); strconv.FormatUint(got, 10) != old {
		t.Errorf("counter 1 raised to %d, want the token %s", got, old)
	}

	// And an absent counter raised to a token ahead of the node's clock
	// holds the token, which Check reads there.
	ahead := strconv.FormatUint(floor+3_600_000_000, 10)
	raise("ahead", ahead)
	if got := counterOn(t, node, "ahead"); strconv.FormatUint(got, 10) != ahead {
		t.Errorf("absent counter raised to %d, want the token %s", got, ahead)
	}
}

func TestFence_counterLostToAClockJumpRestartsAboveItsTokens(t *testing.T) {
	// A node that gave token X and whose clock then jumped a second
	// forward, expiring the counter, looks to the acquire script like a
	// node whose counter is gone and whose last token, X, is a second
	// behind its clock. A request whose caller read its clock before X's
	// (it waited in a queue) restarts the counter above X nonetheless.
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	micros, err := node.Do(bg, "EVAL", "local t = redis.call('TIME') return t[1] .. string.format('%06d', t[2])", "0")
	if err != nil {
		t.Fatal(err)
	}
	now, _ := strconv.ParseUint(micros, 10, 64)
	x := now - 1_000_000
	late := strconv.FormatUint(x-50_000, 10) // read 50 ms before X's caller read its clock
	v, err := node.Do(bg, "EVAL", redlock.AcquireScriptSource, "4", "jumped", redlock.FenceKey("jumped"), redlock.MarkerKey,
		redlock.ProcessKey, "t1", "10000", "0", "60000", late)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(v, "\n")
	fence, err := strconv.ParseUint(got[1], 10, 64)
	if got[0] != "1" || err != nil {
		t.Fatalf("reply %q", got)
	}
	if fence <= x {
		t.Errorf("fence %d after the jump, not above the token %d the node gave a second before its clock", fence, x)
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
	lock, err := client.TryAcquire(bg, "x")
	if err != nil {
		t.Fatal(err)
	}
	counter := keyOn(t, cluster.Node(0), redlock.FenceKey("x"))
	for _, key := range []string{redlock.MarkerKey, redlock.FenceKey("x"), redlock.FenceKey("")} {
		if _, err := client.TryAcquire(bg, key); !errors.Is(err, redlock.ErrInvalidKey) {
			t.Errorf("lock on %q: err = %v, want ErrInvalidKey", key, err)
		}
		// By token too: a release of the fencing counter would let the
		// next token go backwards, one of the marker would put the node
		// in quarantine.
		for _, token := range []string{"0", counter} {
			if err := client.ReleaseToken(bg, key, token); !errors.Is(err, redlock.ErrInvalidKey) {
				t.Errorf("ReleaseToken(%q, %q): err = %v, want ErrInvalidKey", key, token, err)
			}
			if _, err := client.ExtendToken(bg, key, token, time.Second); !errors.Is(err, redlock.ErrInvalidKey) {
				t.Errorf("ExtendToken(%q, %q): err = %v, want ErrInvalidKey", key, token, err)
			}
		}
	}
	if v := keyOn(t, cluster.Node(0), redlock.MarkerKey); v != "0" {
		t.Errorf("marker = %q after a refused lock on it", v)
	}
	if v := keyOn(t, cluster.Node(0), redlock.FenceKey("x")); v != counter {
		t.Errorf("fencing counter = %q after refused calls on it, want %q", v, counter)
	}
	lock.Release(bg)
	// A redsync-style name in the same namespace is fine.
	lock, err = client.TryAcquire(bg, "redlock:orders")
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
		v, err := node.Do(bg, "EVAL", redlock.AcquireScriptSource, "4", key, redlock.FenceKey(key), redlock.MarkerKey, redlock.ProcessKey,
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

// A request that a client sends again once its reply was lost (go-redis
// does after a socket timeout) runs the acquire script twice; a second run
// of a granted attempt answers the grant again, with the same fencing
// token, and changes nothing, so that a refusal always means that the node
// holds nothing of the attempt's. Each script, with the restart
// quarantine on (marked nodes) and off, and a newcomer's first attempt
// that would defer to a client queued before it.
func TestFence_repeatedRequestAnswersTheSameGrant(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	clock := strconv.FormatInt(time.Now().UnixMicro(), 10)
	queue, deadlines := redlock.QueueKeys("queued")
	plain := func(key, token, delay string) []string {
		t.Helper()
		v, err := node.Do(bg, "EVAL", redlock.AcquireScriptSource, "4", key, redlock.FenceKey(key), redlock.MarkerKey, redlock.ProcessKey,
			token, "10000", delay, "60000", clock)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(v, "\n")
	}
	queued := func(token, id, mode string) []string {
		t.Helper()
		v, err := node.Do(bg, "EVAL", redlock.QueuedAcquireScriptSource, "7", "queued", redlock.FenceKey("queued"), redlock.MarkerKey,
			redlock.ProcessKey, queue, deadlines, redlock.WaitingKey("queued"),
			token, "10000", "30000000", "60000", clock, id, clock, "2000000", mode)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(v, "\n")
	}
	for _, delay := range []string{"0", "30000000"} {
		key := "plain-" + delay
		first := plain(key, "t1", delay)
		if first[0] != "1" {
			t.Fatalf("recovery delay %s: first run %q, want a grant", delay, first)
		}
		if again := plain(key, "t1", delay); again[0] != "1" || again[1] != first[1] {
			t.Errorf("recovery delay %s: the same request again: %q, want the grant %q", delay, again, first)
		}
		if other := plain(key, "t2", delay); other[0] != "0" {
			t.Errorf("recovery delay %s: another attempt: %q, want a refusal", delay, other)
		}
		if got := keyOn(t, node, redlock.FenceKey(key)); got != first[1] {
			t.Errorf("recovery delay %s: counter %s after the repeated run, want %s", delay, got, first[1])
		}
	}
	// A newcomer whose first attempt was granted, sent again after a
	// waiter queued: the first attempt would defer to it, the repeat
	// answers the grant.
	first := queued("q1", "newcomer", "1")
	if first[0] != "1" {
		t.Fatalf("first run %q, want a grant", first)
	}
	if refused := queued("q2", "waiter", "0"); refused[0] != "0" {
		t.Fatalf("a waiter's attempt on the held key: %q, want a refusal", refused)
	}
	if again := queued("q1", "newcomer", "1"); again[0] != "1" || again[1] != first[1] {
		t.Errorf("the newcomer's request again, behind a waiter: %q, want the grant %q", again, first)
	}
	if got := keyOn(t, node, "queued"); got != "q1" {
		t.Errorf("key holds %q, want q1", got)
	}
}

// A lock name whose key holds another program's data of another type than
// a lock's, without an expiry, fails Acquire at once, for a writer or a
// reader: no release would ever free it, and waiting for one would last
// for ever. A string without an expiry may be another library's lock that
// sets none: Acquire waits for it as for any holder. The data is left
// alone.
func TestAcquire_keyHoldingDataFailsFast(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	for i := range 3 {
		do(t, cluster.Node(i), "HSET", "profile", "name", "ada")
		do(t, cluster.Node(i), "RPUSH", "jobs", "j1")
		do(t, cluster.Node(i), "SET", "setting", "on")
		do(t, cluster.Node(i), "ZADD", "scores", "1", "ada") // a sorted set, as readers are, but without expiry
	}
	for _, key := range []string{"profile", "jobs", "setting", "scores"} {
		for _, opts := range [][]redlock.LockOption{nil, {redlock.WithShared()}} {
			ctx, cancel := context.WithTimeout(bg, 2*time.Second)
			_, err := client.Acquire(ctx, key, opts...)
			cancel()
			if key == "setting" {
				if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Acquire(%q, %d options) = %v, want a wait to the deadline, as for a held lock", key, len(opts), err)
				}
				continue
			}
			if err == nil || !errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded) ||
				!strings.Contains(err.Error(), "another type than a lock's") {
				t.Errorf("Acquire(%q, %d options) = %v, want ErrNotAcquired at once, saying the key is not a lock", key, len(opts), err)
			}
		}
	}
	// A single attempt says so too, for a writer, a reader and a permit,
	// as ErrInvalidOptions, which no retry fixes: a caller that polls
	// stops there rather than take it for contention.
	for i := range 3 {
		do(t, cluster.Node(i), "HSET", "pool:permit:1", "f", "v")
		do(t, cluster.Node(i), "HSET", "pool:permit:2", "f", "v")
	}
	for _, c := range []struct {
		key  string
		opts []redlock.LockOption
	}{
		{"profile", nil}, {"profile", []redlock.LockOption{redlock.WithShared()}},
		{"scores", []redlock.LockOption{redlock.WithShared()}}, {"pool", []redlock.LockOption{redlock.WithLimit(2)}},
	} {
		if _, err := client.TryAcquire(bg, c.key, c.opts...); !errors.Is(err, redlock.ErrInvalidOptions) || !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryAcquire(%q, %d options) = %v, want ErrNotAcquired and ErrInvalidOptions", c.key, len(c.opts), err)
		}
	}
	// Inspect says what each node's key holds when it is no lock.
	for key, want := range map[string]string{"profile": "hash", "jobs": "list", "setting": "", "scores": "zset"} {
		states, err := client.Inspect(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range states {
			if st.Err != nil || st.Data != want || (key == "setting") != (st.Holder == "on") {
				t.Errorf("Inspect(%q) on %s: %+v, want data %q", key, st.Node, st, want)
			}
		}
	}
	for i := range 3 {
		if v := do(t, cluster.Node(i), "HGET", "profile", "name"); v != "ada" {
			t.Errorf("node %d: the hash's field is %q, want ada", i, v)
		}
		if v := keyOn(t, cluster.Node(i), "setting"); v != "on" {
			t.Errorf("node %d: the string is %q, want on", i, v)
		}
		n, score, ttl := do(t, cluster.Node(i), "ZCARD", "scores"), do(t, cluster.Node(i), "ZSCORE", "scores", "ada"), do(t, cluster.Node(i), "PTTL", "scores")
		if n != "1" || score != "1" || ttl != "-1" {
			t.Errorf("node %d: the sorted set has %s members, ada's score %q, PTTL %s; want ada alone at 1, no expiry", i, n, score, ttl)
		}
	}
}

// A lock name whose key holds another program's sorted set with an expiry
// fails a reader's Acquire at once too, and ForceRelease on every node,
// and the set is left alone: its members are no tokens of a lock's
// readers. Before, a reader joined the set, dropped the members whose
// score had passed as expired readers and set the key's expiry to its
// own; a forced release deleted the set.
func TestAcquire_sortedSetWithAnExpiryIsNoReaders(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	for i := range 3 {
		do(t, cluster.Node(i), "ZADD", "jobs", "1", "old-job", "99999999999999", "future-job")
		do(t, cluster.Node(i), "EXPIRE", "jobs", "1000")
	}
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	_, err := client.Acquire(ctx, "jobs", redlock.WithShared())
	cancel()
	if !errors.Is(err, redlock.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "no lock's readers") {
		t.Errorf("a reader's Acquire of a sorted set with an expiry = %v, want ErrNotAcquired at once, saying the key is no lock's readers", err)
	}
	if _, err := client.ForceRelease(bg, "jobs", "ops"); err == nil {
		t.Error("ForceRelease of a sorted set with an expiry succeeded, want it refused")
	}
	for i := range 3 {
		n, ttl := do(t, cluster.Node(i), "ZCARD", "jobs"), do(t, cluster.Node(i), "TTL", "jobs")
		if ttlS, _ := strconv.Atoi(ttl); n != "2" || ttlS < 900 || ttlS > 1000 {
			t.Errorf("node %d: the sorted set has %s members and TTL %s s; want both members, and its own TTL", i, n, ttl)
		}
	}
}

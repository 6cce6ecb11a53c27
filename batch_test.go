package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wire"
	"github.com/redlock-go/redlock/redlocktest"
)

// pipeAdapters build a Conn to one address with each client library (see
// GoredisConn).
var pipeAdapters = []struct {
	name string
	conn func(t *testing.T, addr string) Conn
}{
	{"goredis", func(t *testing.T, addr string) Conn { return GoredisConn(t, addr) }},
	{"rueidis", func(t *testing.T, addr string) Conn { return RueidisConn(t, addr) }},
}

// pipeClient returns a Client over the nodes of cluster with the named
// adapter, its nodes marked ready.
func pipeClient(t *testing.T, cluster *redlocktest.Cluster, conn func(*testing.T, string) Conn) *Client {
	t.Helper()
	var conns []Conn
	for _, addr := range cluster.Addrs() {
		conns = append(conns, conn(t, addr))
	}
	// By EVALSHA: the tests read the script cache to see that requests
	// went together (see TestPipe_batchRunsAsOneFunctionCall).
	c, err := New(conns, &Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond, DisableFunctions: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.MarkReady(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	return c
}

func must(t *testing.T, n *redlocktest.Node, args ...string) string {
	t.Helper()
	v, err := n.Do(context.Background(), args...)
	if err != nil && !errors.Is(err, redlocktest.ErrNil) {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// A batch gives every request the reply it would get alone, the error of
// one request included, and goes by EVAL when the node lost its scripts.
func TestPipe_batchAnswersEachRequestAsAlone(t *testing.T) {
	for _, a := range pipeAdapters {
		t.Run(a.name, func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
			node := cluster.Node(0)
			c := pipeClient(t, cluster, a.conn)
			must(t, node, "SET", "held", "someone-else", "PX", "60000")
			must(t, node, "SET", "mine", "tok-mine", "PX", "60000")
			must(t, node, "SET", "ext", "tok-ext", "PX", "1000")
			must(t, node, "RPUSH", FenceKey("broken"), "not a counter")
			must(t, node, "SCRIPT", "FLUSH")

			replies := make([][]acquireReply, 3)
			for i := range replies {
				replies[i] = make([]acquireReply, 1)
			}
			reqs := []*nodes.Request{
				testAcquirer(c, "free", "tok-free", 10*time.Second, replies[0]),
				testAcquirer(c, "held", "tok-held", 10*time.Second, replies[1]),
				releaser("mine", "tok-mine"),
				{Script: wire.ExtendScript, Keys: []string{"ext", FenceKey("ext")}, Args: []string{"tok-ext", "60000", "90000"}},
				testAcquirer(c, "broken", "tok-broken", 10*time.Second, replies[2]),
				releaser("held", "wrong-token"),
			}
			got := sendTogether(t, c, reqs)
			wantAloneReplies(t, got, replies[0][0])
			wantGet(t, node, "free", "tok-free", "after its acquisition")
			wantGet(t, node, "mine", "", "after its release")
			wantGet(t, node, "held", "someone-else", "after a release with another token: the other holder's lock must stay")
			if ms, _ := strconv.Atoi(must(t, node, "PTTL", "ext")); ms < 10000 {
				t.Errorf("ext expires in %d ms after its extension to 60 s", ms)
			}
			wantBatchScriptRan(t, node)
		})
	}
}

// wantAloneReplies checks the replies of TestPipe_batchAnswersEachRequestAsAlone's
// batch: each as if its request ran alone. free is the first acquisition's
// decoded reply.
func wantAloneReplies(t *testing.T, got []nodes.Reply, free acquireReply) {
	t.Helper()
	want := []any{int64(acquireGranted), int64(acquireHeld), int64(1), int64(1), nil, int64(0)}
	for i, w := range want {
		if i == 4 {
			continue
		}
		if got[i].Err != nil || got[i].Val != w {
			t.Errorf("request %d: got (%v, %v), want %v", i, got[i].Val, got[i].Err, w)
		}
	}
	if got[4].Err == nil || !strings.Contains(got[4].Err.Error(), "WRONGTYPE") {
		t.Errorf("acquire over a broken counter: got (%v, %v), want a WRONGTYPE error", got[4].Val, got[4].Err)
	}
	if free.fence == 0 {
		t.Error("granted acquisition without a fencing token")
	}
}

// sendTogether sends reqs to c's first node in one batch, and returns their
// replies in order.
func sendTogether(t *testing.T, c *Client, reqs []*nodes.Request) []nodes.Reply {
	t.Helper()
	return c.nodes.SendTogether(0, time.Now().Add(5*time.Second), reqs)
}

// values returns the answers' values, and fails the test on an error.
func values(t *testing.T, answers []nodes.Reply) []any {
	t.Helper()
	vals := make([]any, len(answers))
	for i, a := range answers {
		if a.Err != nil {
			t.Fatalf("request %d: %v", i, a.Err)
		}
		vals[i] = a.Val
	}
	return vals
}

// wantGet fails the test unless key holds want on n ("" for absent).
func wantGet(t *testing.T, n *redlocktest.Node, key, want, when string) {
	t.Helper()
	if v := must(t, n, "GET", key); v != want {
		t.Errorf("%s = %q %s, want %q", key, v, when, want)
	}
}

// wantBatchScriptRan fails the test unless n has run the batch script.
func wantBatchScriptRan(t *testing.T, n *redlocktest.Node) {
	t.Helper()
	if v := must(t, n, "SCRIPT", "EXISTS", wire.BatchScript.SHA1); v != "1" {
		t.Errorf("SCRIPT EXISTS batch script = %q: the requests did not go as one batch", v)
	}
}

// Many goroutines contending for a few keys never hold one key at once, see
// its fencing tokens grow, and leave nothing behind, while their requests
// share batches.
func TestPipe_contendedKeysStayExclusive(t *testing.T) {
	for _, a := range pipeAdapters {
		t.Run(a.name, func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
			c := pipeClient(t, cluster, a.conn)
			const keys = 4
			ex := newExclusivity(keys)
			runFor(1500*time.Millisecond, 48, func() bool {
				k := rand.IntN(keys)
				lock, err := c.TryAcquire(context.Background(), fmt.Sprint("contended-", k))
				if err != nil {
					if !errors.Is(err, ErrNotAcquired) {
						t.Error(err)
						return false
					}
					return true
				}
				ex.hold(t, k, lock, 0)
				if err := lock.Release(context.Background()); err != nil {
					t.Errorf("release key %d: %v", k, err)
				}
				return true
			})
			grants := ex.grants.Load()
			if grants < 10 {
				t.Fatalf("only %d grants in 1.5 s", grants)
			}
			batched := 0
			for _, n := range cluster.Nodes() {
				if must(t, n, "SCRIPT", "EXISTS", wire.BatchScript.SHA1) == "1" {
					batched++
				}
				for k := range keys {
					deadline := time.Now().Add(time.Second)
					for must(t, n, "GET", fmt.Sprint("contended-", k)) != "" {
						if time.Now().After(deadline) {
							t.Errorf("node %d still holds key %d after every release", n.Index(), k)
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
			}
			if batched == 0 {
				t.Error("48 goroutines never shared a script call")
			}
			t.Logf("%d grants", grants)
		})
	}
}

// Goroutines of one client waiting for one key get it from each other's
// releases: on every node the release and the next attempt share a script
// call, so a handoff costs about one script call per node rather than two;
// the lock stays exclusive and its fencing tokens grow.
//
// An attempt that a release took with it is always seen through: a grant
// nobody collected would hold the key until its TTL, and the next Acquire
// would wait that long.
func TestHandoff_releaseCarriesTheNextAttempt(t *testing.T) {
	for _, a := range pipeAdapters {
		for _, nodes := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%dnodes", a.name, nodes), func(t *testing.T) { testHandoff(t, a.conn, nodes) })
		}
	}
}

func testHandoff(t *testing.T, conn func(*testing.T, string) Conn, nodes int) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: nodes})
	c := pipeClient(t, cluster, conn)
	if l, err := c.Acquire(context.Background(), "handoff"); err != nil { // warm up
		t.Fatal(err)
	} else {
		l.Release(context.Background())
	}
	for _, n := range cluster.Nodes() {
		must(t, n, "CONFIG", "RESETSTAT")
	}
	ex := newExclusivity(1)
	runFor(1500*time.Millisecond, 6, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		lock, err := c.Acquire(ctx, "handoff")
		cancel()
		if err != nil {
			t.Error(err)
			return false
		}
		ex.hold(t, 0, lock, 200*time.Microsecond)
		if err := lock.Release(context.Background()); err != nil {
			t.Errorf("release: %v", err)
		}
		return true
	})
	n := ex.grants.Load()
	if n < 20 {
		t.Fatalf("only %d grants in 1.5 s", n)
	}
	for _, node := range cluster.Nodes() {
		calls := scriptCalls(t, node)
		t.Logf("node %d: %d script calls for %d grants", node.Index(), calls, n)
		// Without handoffs every grant takes an acquisition and a
		// release: two calls.
		if calls > n*7/4 {
			t.Errorf("node %d: %d script calls for %d grants: releases did not carry the next attempt", node.Index(), calls, n)
		}
	}
}

// scriptCalls returns how many EVALSHA, EVAL and FCALL calls node n served
// since its statistics were reset.
func scriptCalls(t *testing.T, n *redlocktest.Node) int64 {
	t.Helper()
	var total int64
	for _, line := range strings.Split(must(t, n, "INFO", "commandstats"), "\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls=", "cmdstat_fcall:calls="} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
				v, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
				total += v
			}
		}
	}
	return total
}

// exclusivity checks that no key of a few is held twice at once and that
// each key's fencing tokens grow, and counts the grants.
type exclusivity struct {
	holders   []atomic.Int32
	lastFence []uint64 // each written only by its key's holder
	grants    atomic.Int64
}

func newExclusivity(keys int) *exclusivity {
	return &exclusivity{holders: make([]atomic.Int32, keys), lastFence: make([]uint64, keys)}
}

// hold records lock, of key k, held for d.
func (e *exclusivity) hold(t *testing.T, k int, lock *Lock, d time.Duration) {
	if e.holders[k].Add(1) != 1 {
		t.Errorf("key %d held twice at once", k)
	}
	if lock.Fence() <= e.lastFence[k] {
		t.Errorf("key %d: fence %d after %d", k, lock.Fence(), e.lastFence[k])
	}
	e.lastFence[k] = lock.Fence()
	e.grants.Add(1)
	time.Sleep(d)
	e.holders[k].Add(-1)
}

// runFor runs cycle in a loop on each of n goroutines for d, or until it
// returns false, and waits for them.
func runFor(d time.Duration, n int, cycle func() bool) {
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for time.Now().Before(stop) && cycle() {
			}
		})
	}
	wg.Wait()
}

// The requests of a batch share the node's clock and restart marker: on a
// node without a marker, every acquisition in the batch is refused as
// recovering, the first one starts the quarantine, and once the node is
// marked ready they are granted.
func TestPipe_batchSharesTheRestartMarker(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Unmarked: true})
	node := cluster.Node(0)
	conn := pipeAdapters[1].conn(t, cluster.Addrs()[0])
	c, err := New([]Conn{conn}, &Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sendBatch := func() []acquireReply {
		replies := make([][]acquireReply, 3)
		reqs := make([]*nodes.Request, 3)
		for i := range replies {
			replies[i] = make([]acquireReply, 1)
			reqs[i] = testAcquirer(c, fmt.Sprint("fresh-", i), fmt.Sprint("tok-", i), 10*time.Second, replies[i])
		}
		values(t, sendTogether(t, c, reqs))
		got := make([]acquireReply, len(replies))
		for i := range replies {
			got[i] = replies[i][0]
		}
		return got
	}
	for i, r := range sendBatch() {
		if r.status != acquireRecovering || r.left <= 0 || r.left > c.opts.RecoveryDelay {
			t.Errorf("request %d on a node without a marker: %+v, want recovering for up to %s", i, r, c.opts.RecoveryDelay)
		}
	}
	marker := must(t, node, "GET", MarkerKey)
	if marker == "" {
		t.Fatal("no restart marker after the batch")
	}
	for i := range 3 {
		wantGet(t, node, fmt.Sprint("fresh-", i), "", "on a recovering node")
	}
	if err := c.MarkReady(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	for i, r := range sendBatch() {
		if r.status != acquireGranted || r.fence == 0 {
			t.Errorf("request %d on a ready node: %+v, want granted with a fence", i, r)
		}
	}
}

// A batch of acquisitions, inspections and mark-ready requests on a node
// without a marker: each request sees the node's clock and restart marker as
// the requests before it in the batch left them, the clock read once.
func TestPipe_batchMixesScriptsOverOneClockAndMarker(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Unmarked: true})
	node := cluster.Node(0)
	c := mixedBatchClient(t, cluster, true)
	sendMixedBatch(t, c, node)
	wantBatchScriptRan(t, node)
}

// The batch runs as one function of the library where the node has
// functions: one FCALL for the whole mixed batch, whose requests see the
// node's clock and restart marker as TestPipe_batchMixesScriptsOverOneClockAndMarker
// says, and no INFO once the library knows the node's run_id.
func TestPipe_batchRunsAsOneFunctionCall(t *testing.T) {
	if v, err := redlocktest.ServerVersion(""); err != nil {
		t.Fatal(err)
	} else if !v.Has(redlocktest.Functions) {
		t.Skipf("redis-server %s lacks %s", v, redlocktest.Functions)
	}
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	c := mixedBatchClient(t, cluster, false)
	must(t, node, "FUNCTION", "LOAD", wire.Library)
	// Marking the node ready reads its run_id; the batch then finds no
	// marker again.
	if err := c.MarkReady(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	must(t, node, "DEL", MarkerKey, ProcessKey)
	must(t, node, "CONFIG", "RESETSTAT")
	sendMixedBatch(t, c, node)
	stats := must(t, node, "INFO", "commandstats")
	if calls := commandCalls(stats, "fcall"); calls != 1 {
		t.Errorf("%d FCALL for one batch, want 1:\n%s", calls, stats)
	}
	for _, cmd := range []string{"evalsha", "eval", "info"} {
		if calls := commandCalls(stats, cmd); calls != 0 {
			t.Errorf("%d %s calls for a batch run as a function, want none:\n%s", calls, cmd, stats)
		}
	}
}

// commandCalls returns the calls of command in the body of INFO
// commandstats.
func commandCalls(stats, command string) int64 {
	for _, line := range strings.Split(stats, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+command+":calls="); ok {
			v, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			return v
		}
	}
	return 0
}

// mixedBatchClient returns a Client over the one node of cluster, which
// runs its scripts by EVALSHA when scripts is true, and as functions
// otherwise.
func mixedBatchClient(t *testing.T, cluster *redlocktest.Cluster, scripts bool) *Client {
	t.Helper()
	conn := pipeAdapters[0].conn(t, cluster.Addrs()[0])
	c, err := New([]Conn{conn}, &Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond, DisableFunctions: scripts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// sendMixedBatch sends a batch of acquisitions, inspections and mark-ready
// requests to node, which has no marker, and checks the replies.
func sendMixedBatch(t *testing.T, c *Client, node *redlocktest.Node) {
	t.Helper()
	delay := c.opts.RecoveryDelay
	inspector := func() *nodes.Request {
		return &nodes.Request{Script: wire.InspectScript, Keys: c.inspectKeys("mixed"), Args: []string{c.wire.recovery},
			Decode: nodes.DecodeFunc(func(_ int, v any) (any, error) {
				s, err := c.decodeInspect(v)
				return s, err
			})}
	}
	markReady := func() *nodes.Request {
		// Forced: the node is new, and no check read it before.
		return &nodes.Request{Script: wire.MarkReadyScript, Keys: []string{MarkerKey, ProcessKey}, Args: []string{c.wire.recovery, "1"}}
	}
	replies := [][]acquireReply{make([]acquireReply, 1), make([]acquireReply, 1)}
	reqs := []*nodes.Request{
		inspector(),
		testAcquirer(c, "mixed", "tok-1", 10*time.Second, replies[0]),
		inspector(),
		markReady(),
		inspector(),
		testAcquirer(c, "mixed", "tok-5", 10*time.Second, replies[1]),
		inspector(),
		markReady(),
	}
	got := values(t, sendTogether(t, c, reqs))
	wantQuarantineStarted(t, got, replies[0][0], delay)
	wantMarkedReady(t, got, replies[1][0])
	wantGet(t, node, MarkerKey, "0", "after the batch")
}

// wantQuarantineStarted checks the first three replies of
// TestPipe_batchMixesScriptsOverOneClockAndMarker's batch: the first
// acquisition starts the quarantine, and the inspections before and after
// it see the whole delay ahead. first is that acquisition's decoded reply.
func wantQuarantineStarted(t *testing.T, got []any, first acquireReply, delay time.Duration) {
	t.Helper()
	if s := got[0].(NodeState); !s.NoMarker || !s.Recovering || s.RecoveringLeft != delay {
		t.Errorf("inspect without a marker: %+v, want recovering for the whole %s", s, delay)
	}
	if first.status != acquireRecovering || first.left != delay {
		t.Errorf("first acquisition: %+v, want recovering for the whole %s", first, delay)
	}
	// The marker holds the batch's clock, which the inspection reads again.
	if s := got[2].(NodeState); s.NoMarker || !s.Recovering || s.RecoveringLeft != delay {
		t.Errorf("inspect after the quarantine started: %+v, want recovering for the whole %s", s, delay)
	}
}

// wantMarkedReady checks the rest of that batch's replies: mark ready ends
// the quarantine, the next acquisition is granted, and a second mark ready
// finds the node ready. granted is that acquisition's decoded reply.
func wantMarkedReady(t *testing.T, got []any, granted acquireReply) {
	t.Helper()
	if got[3] != int64(1) {
		t.Errorf("mark ready on a recovering node: %v, want 1", got[3])
	}
	if s := got[4].(NodeState); s.NoMarker || s.Recovering || s.Holder != "" {
		t.Errorf("inspect after mark ready: %+v, want ready and free", s)
	}
	if granted.status != acquireGranted || granted.fence == 0 {
		t.Errorf("acquisition after mark ready: %+v, want granted", granted)
	}
	if s := got[6].(NodeState); s.Holder != "tok-5" || s.TTL <= 0 || s.Fence != granted.fence || s.Recovering {
		t.Errorf("inspect after the grant: %+v, want tok-5 holding fence %d", s, granted.fence)
	}
	if got[7] != int64(0) {
		t.Errorf("mark ready on a ready node: %v, want 0", got[7])
	}
}

// testAcquirer returns an acquisition request for key with token, as an
// attempt would send it now.
func testAcquirer(c *Client, key, token string, ttl time.Duration, replies []acquireReply) *nodes.Request {
	clock := strconv.FormatInt(time.Now().UnixMicro(), 10)
	return c.acquirer(&acquireRequest{}, key, FenceKey(key), token, clock, ttl, replies)
}

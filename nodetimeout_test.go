package redlock_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// While the nodes' replies come late, the per-node timeout rises to twice
// the longest time a majority took to reply, up to MaxNodeTimeout (a
// quarter of the TTL, at most 400 ms, by default); set to NodeTimeout, it
// stays there.
func TestNodeTimeout_risesWhileRepliesComeLate(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) { testNodeTimeoutRises(t, a) })
}

func testNodeTimeoutRises(t *testing.T, a adapter) {
	const nodeTimeout, pause, ttl = 50 * time.Millisecond, 150 * time.Millisecond, 8 * time.Second
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	clients := []struct {
		name        string
		max         time.Duration
		least, most time.Duration // the node timeout after late replies
		client      *redlock.Client
	}{
		{name: "default", least: 3 * nodeTimeout, most: 400 * time.Millisecond},
		{name: "capped", max: 120 * time.Millisecond, least: 120 * time.Millisecond, most: 120 * time.Millisecond},
		{name: "fixed", max: nodeTimeout, least: nodeTimeout, most: nodeTimeout},
	}
	for i := range clients {
		c := &clients[i]
		c.client = newClient(t, cluster, a, &redlock.Options{TTL: ttl, NodeTimeout: nodeTimeout, MaxNodeTimeout: c.max})
		if l, err := c.client.TryAcquire(bg, "warm"); err != nil {
			t.Fatal(err)
		} else {
			l.Release(bg)
		}
	}

	// Every node silent for a while: each attempt times out, and its
	// replies land once the nodes are back.
	pauseAll(t, cluster)
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { _, errs[i] = c.client.TryAcquire(bg, "first") })
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("%s: every node paused: %v", clients[i].name, err)
		}
	}
	time.Sleep(pause) // the fault's length, not a wait for a result
	resumeAll(t, cluster)
	eventually(t, "the late replies remembered", func() bool {
		return clients[0].client.RecentReplyTime() >= pause-nodeTimeout && clients[1].client.RecentReplyTime() >= pause-nodeTimeout
	})
	if got := clients[2].client.RecentReplyTime(); got != 0 {
		t.Errorf("fixed: remembers a reply time of %v", got)
	}

	for _, c := range clients {
		if got := c.client.NodeTimeoutFor(ttl); got < c.least || got > c.most {
			t.Errorf("%s: node timeout %v after late replies, want between %v and %v", c.name, got, c.least, c.most)
		}
	}

	// The next attempt waits that long for silent nodes: at least the
	// timeout as it stands once it returned, as the remembered reply time
	// decays meanwhile (a node's latency, counted from when its request
	// left, can be shorter on a busy host). The attempts run together, so
	// that the decay since the check above is a matter of milliseconds.
	pauseAll(t, cluster)
	type attempt struct {
		err                 error
		took, before, after time.Duration
	}
	attempts := make([]attempt, len(clients))
	checks := make([]attempt, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			a := &attempts[i]
			a.before = c.client.NodeTimeoutFor(ttl)
			start := time.Now()
			_, a.err = c.client.TryAcquire(bg, "second")
			a.took, a.after = time.Since(start), c.client.NodeTimeoutFor(ttl)
		})
		// A check waits as long as a lock's request: a resource's
		// check does not fail where the holder's renewal succeeds.
		wg.Go(func() {
			a := &checks[i]
			start := time.Now()
			_, a.err = c.client.Check(bg, "second", "any-token")
			a.took, a.after = time.Since(start), c.client.NodeTimeoutFor(ttl)
		})
	}
	wg.Wait()
	for i, c := range clients {
		checkWaited(t, c.name, checks[i].err, checks[i].took, checks[i].after)
	}
	for i, c := range clients {
		a := attempts[i]
		timeouts := 0
		for _, n := range quorumError(t, a.err).Nodes {
			switch n.Outcome {
			case redlock.OutcomeNoAnswer:
			case redlock.OutcomeTimeout:
				timeouts++
			default:
				t.Fatalf("%s: %s answered %v while paused: %v", c.name, n.Node, n.Outcome, a.err)
			}
		}
		if timeouts == 0 {
			t.Errorf("%s: no node timed out while paused: %v", c.name, a.err)
		}
		if a.took < a.after-time.Millisecond {
			t.Errorf("%s: the attempt on silent nodes returned after %v, within the node timeout of %v", c.name, a.took, a.after)
		}
		if raised := a.before > nodeTimeout; raised != (c.most > nodeTimeout) {
			t.Errorf("%s: node timeout %v as the attempt began", c.name, a.before)
		}
	}
}

// checkWaited fails the test unless a Check on silent nodes failed with
// ErrNotChecked after waiting at least the node timeout as it stood when
// it returned.
func checkWaited(t *testing.T, client string, err error, took, timeout time.Duration) {
	t.Helper()
	if !errors.Is(err, redlock.ErrNotChecked) {
		t.Errorf("%s: Check on paused nodes: %v, want ErrNotChecked", client, err)
	}
	if took < timeout-time.Millisecond {
		t.Errorf("%s: Check on silent nodes returned after %v, within the node timeout of %v", client, took, timeout)
	}
}

func pauseAll(t *testing.T, cluster *redlocktest.Cluster) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		if err := n.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { resumeAll(t, cluster) })
}

func resumeAll(t *testing.T, cluster *redlocktest.Cluster) {
	t.Helper()
	for _, n := range cluster.Nodes() {
		if n.Paused() {
			if err := n.Resume(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A Client of one node counts a request that timed out as a reply that
// took its timeout: a connection that ends a request at its deadline
// (rueidis, go-redis with ContextTimeoutEnabled, as goredis.Dial of one
// node makes it) drops the node's late reply, and the timeout would never
// rise past the replies heard within it. So the attempts on a node that
// stopped answering wait longer and longer, up to MaxNodeTimeout; fixed,
// they do not.
func TestNodeTimeout_risesOverOneSlowNode(t *testing.T) {
	for _, a := range withDial() {
		t.Run(a.name, func(t *testing.T) { testNodeTimeoutRisesOverOneNode(t, a) })
	}
}

func testNodeTimeoutRisesOverOneNode(t *testing.T, a adapter) {
	const nodeTimeout, ttl = 50 * time.Millisecond, 8 * time.Second
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	open := func(max time.Duration) *redlock.Client {
		return newClientOrDial(t, cluster, a, &redlock.Options{TTL: ttl, NodeTimeout: nodeTimeout, MaxNodeTimeout: max})
	}
	rising, fixed := open(0), open(nodeTimeout)
	for _, c := range []*redlock.Client{rising, fixed} {
		l, err := c.TryAcquire(bg, "warm")
		if err != nil {
			t.Fatal(err)
		}
		l.Release(bg)
	}

	// The node silent: each attempt times out, after a longer wait than the
	// one before, until one waits 150 ms or more.
	pauseAll(t, cluster)
	waited := func(c *redlock.Client, key string) time.Duration {
		t.Helper()
		_, err := c.TryAcquire(bg, key)
		n := quorumError(t, err).Nodes[0]
		if n.Outcome != redlock.OutcomeTimeout {
			t.Fatalf("the node answered %v while paused: %v", n.Outcome, err)
		}
		return n.Latency
	}
	var waits []time.Duration
	for len(waits) == 0 || waits[len(waits)-1] < 3*nodeTimeout {
		if len(waits) == 8 {
			t.Fatalf("attempts on the silent node waited %v", waits)
		}
		waits = append(waits, waited(rising, "rising"))
	}
	if got := rising.NodeTimeoutFor(ttl); got > 400*time.Millisecond {
		t.Errorf("node timeout %v, above the default cap of 400ms", got)
	}

	// An Acquire whose context ends first waits for its attempt's
	// clean-up at most NodeTimeout past its deadline, not the raised
	// timeout (twice the last wait, at least 300 ms here). rueidis makes
	// a call that meets a reconnection under way wait for it, whatever the
	// call's context, and reconnects under the context of the call that
	// found the connection closed: here a background release's, bounded
	// by the raised timeout (about one run in forty).
	const deadline = 100 * time.Millisecond
	bound := deadline + nodeTimeout + 150*time.Millisecond
	if a.name == "rueidis" {
		bound += rising.NodeTimeoutFor(ttl)
	}
	ctx, cancel := context.WithTimeout(bg, deadline)
	start := time.Now()
	_, err := rising.Acquire(ctx, "deadline")
	took := time.Since(start)
	cancel()
	if err == nil || took > bound {
		t.Errorf("Acquire with a %v deadline on the silent node: %v after %v, want an error within %v", deadline, err, took, bound)
	}
	for range 3 {
		if got := waited(fixed, "fixed"); got >= 2*nodeTimeout {
			t.Errorf("fixed node timeout: an attempt waited %v", got)
		}
	}
	if got := fixed.RecentReplyTime(); got != 0 {
		t.Errorf("fixed: remembers a reply time of %v", got)
	}

	// Back: the node grants again.
	resumeAll(t, cluster)
	eventually(t, "the node grants again", func() bool {
		l, err := rising.TryAcquire(bg, "after")
		if err != nil {
			return false
		}
		return l.Release(bg) == nil
	})
}

// A set's or a permit's waiter that gives up returns by its deadline: it
// leaves the queues in the background, not waiting for a silent node to
// answer the leave (up to its node timeout, 1 s here). It waits for a
// quorum of the nodes to leave, at most a node timeout past its deadline
// (Client.giveUpQueues): now and then, on a loaded machine, the live nodes'
// answers do not make that quorum in time, and the call returns at that
// bound. So each call must return within it (with a timer's lateness), and
// the fastest of three well before it.
func TestNodeTimeout_waiterThatGivesUpDoesNotWaitForASilentNode(t *testing.T) {
	const nodeTimeout, deadline = time.Second, 300 * time.Millisecond
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	opts := &redlock.Options{NodeTimeout: nodeTimeout, MaxNodeTimeout: nodeTimeout}
	holder, waiter := newClient(t, cluster, adapters[0], opts), newClient(t, cluster, adapters[0], opts)
	set, err := holder.TryAcquireAll(bg, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Release(bg)
	permit, err := holder.TryAcquire(bg, "sem", redlock.WithLimit(1))
	if err != nil {
		t.Fatal(err)
	}
	defer permit.Release(bg)
	// The permit's lock key is the semaphore's first permit.
	eventually(t, "the set and the permit held on every node", func() bool {
		for _, n := range cluster.Nodes() {
			if keyOn(t, n, "b") != set.Locks()[1].Token() || keyOn(t, n, "sem:permit:1") != permit.Token() {
				return false
			}
		}
		return true
	})
	if err := cluster.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resumeAll(t, cluster) })
	for name, acquire := range map[string]func(context.Context) error{
		"AcquireAll": func(ctx context.Context) error { _, err := waiter.AcquireAll(ctx, []string{"a", "b"}); return err },
		"a permit": func(ctx context.Context) error {
			_, err := waiter.Acquire(ctx, "sem", redlock.WithLimit(1))
			return err
		},
	} {
		fastest := time.Duration(math.MaxInt64)
		for range 3 {
			ctx, cancel := context.WithTimeout(bg, deadline)
			start := time.Now()
			err := acquire(ctx)
			took := time.Since(start)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s: %v, want DeadlineExceeded", name, err)
			}
			if took > deadline+nodeTimeout+timerLateness {
				t.Errorf("%s returned %v after it began, past its deadline of %v plus a node timeout", name, took, deadline)
			}
			fastest = min(fastest, took)
		}
		if fastest >= deadline+nodeTimeout/2 {
			t.Errorf("%s: the fastest of three calls returned %v after it began, waiting for the silent node", name, fastest)
		}
	}
}

// timerLateness is how late a timer may fire on a loaded machine.
const timerLateness = 100 * time.Millisecond

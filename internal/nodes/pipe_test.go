package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/wire"
	"github.com/redlock-go/redlock/redlocktest"
)

// testConn is a node's connection over a go-redis client, as the goredis
// adapter makes it, for the tests of this package.
type testConn struct {
	name   string
	client *redis.Client
}

func (c testConn) Name() string { return c.name }

func (c testConn) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	argv := make([]any, len(args))
	for i, a := range args {
		argv[i] = a
	}
	v, err := c.client.EvalSha(ctx, sha1, keys, argv...).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		v, err = c.client.Eval(ctx, source, keys, argv...).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

func (c testConn) Close() error { return c.client.Close() }

// testSet returns a Set over the nodes of cluster.
func testSet(t *testing.T, cluster *redlocktest.Cluster) *Set {
	t.Helper()
	var conns []Conn
	for _, addr := range cluster.Addrs() {
		conns = append(conns, testConn{name: addr, client: redis.NewClient(&redis.Options{Addr: addr})})
	}
	set := New(conns, 0, true)
	t.Cleanup(func() {
		set.Drain(time.Second)
		set.Close(time.Second)
	})
	return set
}

// setter returns a request that takes key with token for 10 s, as a lock's
// acquisition does, on a node without the restart quarantine: the release
// script's opposite, answering 1 once it set the key.
func setter(key, token string) *Request {
	clock := fmt.Sprint(time.Now().UnixMicro())
	return &Request{Script: wire.AcquireScript,
		Keys: []string{key, wire.FenceKey(key), wire.MarkerKey, wire.ProcessKey},
		Args: []string{token, "10000", "0", "40000", clock},
		Decode: DecodeFunc(func(_ int, v any) (any, error) {
			if a, ok := v.([]any); ok && len(a) == 3 {
				return a[0], nil
			}
			return nil, fmt.Errorf("unexpected reply %v", v)
		})}
}

// collect returns a call of req to node 0 and the channel its answer goes to.
func collect(req *Request, deadline time.Time) (*call, chan answer) {
	ch := make(chan answer, 1)
	cl := &call{req: req, ctx: context.Background(), deadline: deadline, start: time.Now(), to: chanReceiver(ch)}
	return cl, ch
}

// chanReceiver delivers answers to a channel.
type chanReceiver chan answer

func (ch chanReceiver) deliver(a answer) { ch <- a }

func (ch chanReceiver) nodeContext(cl *call) (context.Context, context.CancelFunc) {
	return withDeadline(cl.ctx, cl.deadline)
}

// await returns the answer on ch, failing the test after five seconds.
func await(t *testing.T, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5 s")
		return answer{}
	}
}

func must(t *testing.T, n *redlocktest.Node, args ...string) string {
	t.Helper()
	v, err := n.Do(context.Background(), args...)
	if err != nil && !errors.Is(err, redlocktest.ErrNil) {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// A call whose fan-out stopped waiting before its turn came is not sent.
func TestPipe_skipsCallsPastTheirDeadline(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	set := testSet(t, cluster)
	late, lateAnswer := collect(setter("late", "tok-late"), time.Now().Add(-time.Millisecond))
	live, liveAnswer := collect(setter("live", "tok-live"), time.Now().Add(5*time.Second))
	set.pipes[0].send([]*call{late, live})
	if a := await(t, lateAnswer); !errors.Is(a.err, context.DeadlineExceeded) {
		t.Errorf("late call: got (%v, %v), want context.DeadlineExceeded", a.val, a.err)
	}
	if a := await(t, liveAnswer); a.err != nil || a.val != int64(1) {
		t.Errorf("live call: got (%v, %v), want granted", a.val, a.err)
	}
	node := cluster.Node(0)
	if v := must(t, node, "GET", "late"); v != "" {
		t.Errorf("late = %q: a call past its deadline was sent", v)
	}
	if v := must(t, node, "GET", "live"); v != "tok-live" {
		t.Errorf("live = %q", v)
	}
}

// While the node has no room, calls queue; the next batch carries them all.
func TestPipe_queuedCallsLeaveTogether(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	node := cluster.Node(0)
	set := testSet(t, cluster)
	must(t, node, "SCRIPT", "FLUSH")
	p := set.pipes[0]
	p.inline = true // the room, whichever Conn: this one is not asked inline by itself
	waitPipeIdle(t, p)
	for range maxInFlight {
		if !p.tryInline() {
			t.Fatal("an idle pipe has no room")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	var answers []chan answer
	for i := range 3 {
		cl, ch := collect(setter(fmt.Sprint("queued-", i), "tok"), deadline)
		p.submit(cl)
		answers = append(answers, ch)
	}
	select {
	case a := <-answers[0]:
		t.Fatalf("a call was sent while the node had no room: %+v", a)
	case <-time.After(50 * time.Millisecond):
	}
	p.done() // one batch ends: the queue leaves in the next
	for i, ch := range answers {
		if a := await(t, ch); a.err != nil || a.val != int64(1) {
			t.Errorf("queued call %d: got (%v, %v), want granted", i, a.val, a.err)
		}
	}
	if v := must(t, node, "SCRIPT", "EXISTS", wire.BatchScript.SHA1); v != "1" {
		t.Errorf("SCRIPT EXISTS batch script = %q: the queued calls did not leave as one batch", v)
	}
	p.done()
	// The goroutine that sent the batch gives its room back after the
	// answers.
	waitPipeIdle(t, p)
}

// waitPipeIdle waits until p has nothing in flight or queued, and fails the
// test after a second.
func waitPipeIdle(t *testing.T, p *pipe) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		inFlight, queued := p.inFlight, len(p.queue)
		p.mu.Unlock()
		if inFlight == 0 && queued == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pipe not idle: %d in flight, %d queued", inFlight, queued)
		}
	}
}

func TestSharedDeadline_sharesOneContextPerSlack(t *testing.T) {
	var d sharedDeadline
	start := time.Now()
	first := d.until(start.Add(time.Minute))
	end, ok := first.Deadline()
	if !ok || end.Before(start.Add(time.Minute)) || end.After(start.Add(time.Minute+batchDeadlineSlack)) {
		t.Fatalf("deadline %v, want within %v after %v", end, batchDeadlineSlack, start.Add(time.Minute))
	}
	if again := d.until(start.Add(time.Minute + batchDeadlineSlack/2)); again != first {
		t.Error("a deadline within the slack got a context of its own")
	}
	later := d.until(start.Add(time.Minute + 2*batchDeadlineSlack))
	if later == first {
		t.Error("a deadline past the shared context's end got that context")
	}
	if earlier := d.until(start.Add(time.Minute - 2*batchDeadlineSlack)); earlier == later {
		t.Error("a deadline more than the slack before the shared context's end got that context")
	}
	last := d.until(start.Add(time.Minute))
	d.stop()
	if last.Err() == nil {
		t.Error("stop left the latest context running")
	}
	if first.Err() != nil {
		t.Error("stop ended a context it no longer hands out: it ends at its own deadline")
	}
}

func TestSharedDeadline_endsAtTheDeadline(t *testing.T) {
	var d sharedDeadline
	ctx := d.until(time.Now().Add(10 * time.Millisecond))
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context did not end")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", ctx.Err())
	}
	if next := d.until(time.Now().Add(time.Minute)); next.Err() != nil {
		t.Errorf("after the shared context ended, until returned an ended context: %v", next.Err())
	}
}

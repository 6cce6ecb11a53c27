package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client acquires locks over N independent Redis masters with the Redlock
// algorithm; with one node it is the single-instance lock. A Client is safe
// for concurrent use by multiple goroutines.
type Client struct {
	conns  []Conn
	quorum int
	opts   Options
	waker  *waker // nil when no node can notify
	turns  *turns
	wire   wireArgs
	// inflight counts requests to single nodes still running after their
	// fan-out returned; Close waits for them.
	inflight sync.WaitGroup
}

// New returns a Client over conns, one per independent Redis master. It does
// no I/O. opts may be nil for the defaults. It fails with ErrNoNodes when
// conns is empty, ErrDuplicateNode when two conns have the same Name, and
// ErrInvalidOptions or ErrInvalidTTL for out-of-range options.
func New(conns []Conn, opts *Options) (*Client, error) {
	if len(conns) == 0 {
		return nil, ErrNoNodes
	}
	seen := make(map[string]int, len(conns))
	for i, c := range conns {
		if c == nil {
			return nil, fmt.Errorf("%w: node %d is nil", ErrNoNodes, i)
		}
		if j, dup := seen[c.Name()]; dup {
			return nil, fmt.Errorf("%w: %s is node %d and node %d", ErrDuplicateNode, c.Name(), j, i)
		}
		seen[c.Name()] = i
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	conns = append([]Conn(nil), conns...)
	return &Client{wire: newWireArgs(o), conns: conns, quorum: len(conns)/2 + 1, opts: o, waker: newWaker(conns, len(conns)/2+1), turns: newTurns()}, nil
}

// Nodes returns the names of the client's nodes, in order.
func (c *Client) Nodes() []string {
	names := make([]string, len(c.conns))
	for i, conn := range c.conns {
		names[i] = conn.Name()
	}
	return names
}

// Conns returns the client's nodes, in order, for tools that inspect them.
func (c *Client) Conns() []Conn { return append([]Conn(nil), c.conns...) }

// Quorum returns how many nodes must agree: N/2+1.
func (c *Client) Quorum() int { return c.quorum }

// Options returns the options in force, defaults filled in.
func (c *Client) Options() Options { return c.opts }

// Close closes every node connection. Locks still held expire with their TTL.
// It first waits for requests still in flight, at most the per-node timeout,
// so that the nodes a Release did not wait for still get the deletion before
// a program that releases and exits closes the connections. No call may start
// after Close.
func (c *Client) Close() error {
	c.inflight.Wait()
	c.waker.close()
	var errs []error
	for _, conn := range c.conns {
		if err := conn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", conn.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// key returns the lock key on the wire.
func (c *Client) key(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: the key is empty", ErrInvalidKey)
	}
	return c.opts.KeyPrefix + name, nil
}

// nodeTimeout returns the per-node timeout for a TTL: no answer arriving after
// the validity a TTL can give is of any use.
func (c *Client) nodeTimeout(ttl time.Duration) time.Duration {
	return min(c.opts.NodeTimeout, ttl-drift(ttl, c.opts.DriftFactor))
}

// answer is one node's reply to a fan-out.
type answer struct {
	node int
	val  any
	err  error
	took time.Duration
}

// sendFunc sends one request to one node.
type sendFunc func(ctx context.Context, conn Conn) (any, error)

// fanout sends a request to every node at once and collects the answers until
// enough(ok, others) is true, every node answered, or timeout passed. Nodes
// that answer later are not waited for: their goroutines end by themselves
// within the timeout. A reply classifies as OutcomeOK when isOK says so.
func (c *Client) fanout(ctx context.Context, timeout time.Duration, send sendFunc, isOK func(any) bool, enough func(ok, others int) bool) (results []NodeResult, ok int) {
	results, ok, _ = c.trackedFanout(ctx, timeout, send, isOK, enough)
	return results, ok
}

// trackedFanout is fanout that also returns, when some nodes were not heard
// out, a channel closed once all of their requests have ended; nil when every
// node answered.
func (c *Client) trackedFanout(ctx context.Context, timeout time.Duration, send sendFunc, isOK func(any) bool, enough func(ok, others int) bool) (results []NodeResult, ok int, landed <-chan struct{}) {
	results = make([]NodeResult, len(c.conns))
	for i, conn := range c.conns {
		results[i].Node = conn.Name()
	}
	start := time.Now()
	if len(c.conns) == 1 {
		nodeCtx, cancel := context.WithTimeout(ctx, timeout)
		val, err := send(nodeCtx, c.conns[0])
		cancel()
		results[0] = classify(results[0].Node, val, err, time.Since(start), isOK)
		if results[0].Outcome == OutcomeOK {
			ok = 1
		}
		return results, ok, nil
	}
	nodeCtx, cancel := context.WithTimeout(ctx, timeout)
	// The last node to answer cancels nodeCtx; the caller may return before.
	pending := atomic.Int32{}
	pending.Store(int32(len(c.conns)))
	done := make(chan struct{})
	finish := func() {
		if pending.Add(-1) == 0 {
			cancel()
			close(done)
		}
	}
	answers := make(chan answer, len(c.conns))
	c.inflight.Add(len(c.conns))
	for i, conn := range c.conns {
		go func() {
			defer c.inflight.Done()
			val, err := send(nodeCtx, conn)
			answers <- answer{node: i, val: val, err: err, took: time.Since(start)}
			finish()
		}()
	}
	others := 0
	record := func(a answer) {
		r := classify(results[a.node].Node, a.val, a.err, a.took, isOK)
		results[a.node] = r
		if r.Outcome == OutcomeOK {
			ok++
		} else {
			others++
		}
	}
	for ok+others < len(c.conns) && !enough(ok, others) {
		select {
		case a := <-answers:
			record(a)
		case <-nodeCtx.Done():
			// Take what already arrived, then mark the silent nodes.
			for drained := false; !drained; {
				select {
				case a := <-answers:
					record(a)
				default:
					drained = true
				}
			}
			if ok+others < len(c.conns) && errors.Is(nodeCtx.Err(), context.DeadlineExceeded) {
				for i := range results {
					if results[i].Outcome == OutcomeNoAnswer {
						results[i].Outcome, results[i].Err, results[i].Latency = OutcomeTimeout, context.DeadlineExceeded, timeout
					}
				}
			}
			return results, ok, done
		}
	}
	if ok+others < len(c.conns) {
		return results, ok, done
	}
	return results, ok, nil
}

// classify turns one node's reply into a NodeResult.
func classify(node string, val any, err error, took time.Duration, isOK func(any) bool) NodeResult {
	r := NodeResult{Node: node, Latency: took}
	switch {
	case err == nil && isOK(val):
		r.Outcome = OutcomeOK
	case err == nil:
		r.Outcome = OutcomeHeld
	case isTimeout(err):
		r.Outcome, r.Err = OutcomeTimeout, err
	default:
		r.Outcome, r.Err = OutcomeError, err
	}
	return r
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// isOne reports a script's integer 1 reply.
func isOne(v any) bool { n, ok := v.(int64); return ok && n == 1 }

// isStatusOK reports SET's OK reply.
func isStatusOK(v any) bool { s, ok := v.(string); return ok && strings.EqualFold(s, "OK") }

// unasked returns a result per node for a request that was never sent.
func (c *Client) unasked() []NodeResult {
	results := make([]NodeResult, len(c.conns))
	for i, conn := range c.conns {
		results[i].Node = conn.Name()
	}
	return results
}

// wireArgs are script arguments that depend only on the options, formatted
// once instead of on every call.
type wireArgs struct {
	ttl        time.Duration
	ttlMillis  string // Options.TTL
	counterTTL string // FenceTTL, in milliseconds
	recovery   string // Options.RecoveryDelay in microseconds; "0" when off
}

func newWireArgs(o Options) wireArgs {
	w := wireArgs{
		ttl:        o.TTL,
		ttlMillis:  strconv.FormatInt(o.TTL.Milliseconds(), 10),
		counterTTL: strconv.FormatInt(FenceTTL.Milliseconds(), 10),
		recovery:   "0",
	}
	if !o.DisableQuarantine {
		w.recovery = strconv.FormatInt(o.RecoveryDelay.Microseconds(), 10)
	}
	return w
}

// millis formats a TTL in milliseconds for a script.
func (w *wireArgs) millis(ttl time.Duration) string {
	if ttl == w.ttl {
		return w.ttlMillis
	}
	return strconv.FormatInt(ttl.Milliseconds(), 10)
}

package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/dialreport"
	"github.com/redlock-go/redlock/internal/identity"
	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wait"
	"github.com/redlock-go/redlock/internal/wire"
)

// Client acquires locks over N independent Redis masters with the Redlock
// algorithm; with one node it is the single-instance lock. A Client is safe
// for concurrent use by multiple goroutines, and is best shared by all of a
// process's: the requests of concurrent calls to a node go together in one
// script call, and a release hands the lock to the next goroutine of the
// same Client waiting in Acquire within one round trip. Make one with New
// or Dial: the zero value is not usable.
type Client struct {
	nodes   *nodes.Set // the nodes, and the fan-out of requests to them
	conns   []Conn     // the nodes, in order
	quorum  int        // N/2+1
	opts    Options
	wire    wireArgs
	waker   *wait.Waker // nil when no node can notify
	waiters *wait.Turns
	// sets order the AcquireAll calls of this client whose sets share a
	// key: the client's one entry in each key's queue is one call's
	// (multikey.go).
	sets    wait.Sets
	permits localPermits // the permits of semaphores held here
	// permitClaims say which call of this client asks for each permit.
	permitClaims permitClaims
	// handoffsFailed changes when an attempt that a release of a permit
	// carried failed: the permit may be free.
	handoffsFailed broadcast
	// permitOffers are the attempts of goroutines waiting for permits,
	// offered to the releases of the permits held here (permitHandoff).
	permitOffers wait.Offers
	// tryPacing holds this client's TryAcquire back from keys whose votes
	// split (trypace.go).
	tryPacing tryPacing
	finish    finishers // releases finished in the background
	// underway counts the acquisitions under way, for Close to let them
	// leave their queues, and release what they won as it closed.
	underway underway
	// leftovers are the tokens of releases that a node missed, sent again
	// when the node refuses the key to this client (leftovers.go).
	leftovers leftovers
	keys      wire.Layout // the names of the keys kept beside each lock key
	// id names this client in the queues of clients waiting for a key
	// (see wire.QueueKeys): random, URL-safe base64.
	id string
	// readers numbers the readers of this client that wait in Acquire,
	// each with an entry of its own in the key's queue (wire.ReaderEntry).
	readers atomic.Uint64
	// tel records metrics, spans and log records (telemetry.go); nil when
	// Options has no logger and no provider.
	tel *telemetry.Telemetry
	// unreachable are the nodes Dial could not reach (UnreachableAtDial).
	unreachable []NodeResult
	// servers are the identities of the nodes' servers, read before each
	// node's first request (see identifyNode).
	servers identity.Registry
	// permitLanes are the turns of this client's goroutines waiting for a
	// permit (wait.Lanes), by semaphore key: up to the semaphore's limit
	// of them try at once.
	permitLanes wait.Lanes
	// voted marks the nodes that granted this client a lock: each was
	// ready then, and one that is not ready now lost its data since
	// (MarkReady refuses it unless forced).
	voted []atomic.Bool
	// closed is closed by Close: the renewals of locks still held stop.
	closed    chan struct{}
	closeOnce sync.Once // Close's work, done once
}

// isNil reports whether c is nil, or holds a nil pointer (a *goredis.Conn
// declared and never dialed), whose methods would panic.
func isNil(c Conn) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// New returns a Client over conns, one per independent Redis master. It does
// no I/O. opts may be nil for the defaults. It fails with ErrInvalidOptions
// when conns is empty or holds nil, ErrDuplicateNode when two conns have the
// same Name, and ErrInvalidOptions or ErrInvalidTTL for out-of-range options.
// One server reached under two names (localhost and 127.0.0.1, a DNS
// alias) would vote twice, and a lock would rest on fewer servers than a
// quorum: of two or more conns, each node's first request therefore
// reads its server's identity first (its run_id, a cluster's node ids:
// one INFO server per node and Client, and CLUSTER MYID on a server in
// cluster mode, or CLUSTER NODES for a whole cluster), and a node found
// to be the server of an entry identified before it is left out for good
// (which of the two counts is the one that answered first, not the
// list's order): its calls fail with an error wrapping ErrDuplicateNode,
// which Options.Logger is told once. A
// node that does not answer that read fails its requests as it would the
// request itself, and is read again at the next. A node whose user is
// refused INFO cannot be identified: it votes, and Options.Logger is
// warned once. The adapters' Dial checks the identities before it returns
// (and refuses a user without INFO).
func New(conns []Conn, opts *Options) (*Client, error) {
	if len(conns) == 0 {
		return nil, fmt.Errorf("%w: no nodes", ErrInvalidOptions)
	}
	seen := make(map[string]int, len(conns))
	for i, c := range conns {
		if isNil(c) {
			return nil, fmt.Errorf("%w: node %d is nil", ErrInvalidOptions, i)
		}
		if j, dup := seen[c.Name()]; dup {
			return nil, fmt.Errorf("%w: %s is entries %d and %d of the node list (counting from 1)", ErrDuplicateNode, c.Name(), j+1, i+1)
		}
		seen[c.Name()] = i
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	given := o // Logger as given: nil when none
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{opts: o, wire: newWireArgs(o), waiters: wait.NewTurns(), id: newClientID(),
		closed: make(chan struct{})}
	if o.WaitReplicas > 0 {
		for _, conn := range conns {
			if _, ok := conn.(ReplicaWaiter); !ok || isRedisCluster(conn) {
				return nil, fmt.Errorf("%w: WaitReplicas needs Conns that can send WAIT after a script on the same connection, "+
					"each a single server (a Redis Cluster's client cannot); %s cannot", ErrInvalidOptions, conn.Name())
			}
		}
	}
	c.conns, c.quorum = slices.Clone(conns), quorumOf(len(conns))
	c.nodes = nodes.New(nodeConns(conns), o.WaitReplicas, !o.DisableFunctions)
	if o.MaxNodeTimeout != o.NodeTimeout {
		// Replies within half the timeout leave it as it is.
		c.nodes.RememberReplies(o.NodeTimeout / 2)
	}
	c.keys.Cluster = slices.ContainsFunc(conns, isRedisCluster)
	c.voted = make([]atomic.Bool, len(conns))
	c.waker = wait.NewWaker(listeners(conns), c.quorum, c.id, c.keys, c.requestTimeout)
	c.tel = c.newTelemetry(given)
	if c.tel != nil {
		c.nodes.OnLateFailure(c.lateFailure)
	}
	if len(conns) > 1 {
		c.nodes.IdentifyFirst(c.identifyNode)
	}
	return c, nil
}

// Close closes every node connection. Locks still held expire with their TTL:
// their renewal stops, and they end (Done) at their deadline, with
// ErrLockExpired, or, for a lock that was being renewed or extended (an
// election's lead among them), with ErrLockLost and ErrClosed, so that a
// program can tell its own shutdown from a loss.
// It first stops the releases being finished in the background, ends the
// calls waiting for a lock and waits for them to take their places out of
// the nodes' queues (the next in line is not held back until a place
// lapses, as behind a client that crashed), and waits for requests still
// in flight, so that the nodes a Release did not wait for still get the
// deletion before a program that releases and exits closes the
// connections. It waits at most four times the per-node timeout in all,
// as it stands (for the background releases, for the waiting calls, for
// the requests in flight, for the connections to close), even with a node
// that stopped answering:
// requests still queued then fail unsent, and a connection that takes longer
// to close finishes closing in the background. Calls waiting for a lock
// return ErrClosed; so does a call whose attempt won as Close began, once
// it released what it won, which its caller could neither renew nor
// release. So do the calls made after Close, which send nothing:
// a Release then fails with ErrNotReleased too (the lock runs out at its
// TTL), and Observe's channel closes. A call that Close cut short wraps
// its error in ErrClosed. Calls of Close after the first wait for it and
// return nil. Close called from a WithRetryNotify function waits out its
// bound for the call that runs it, whose places in line then lapse.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		c.finish.stop()
		c.underway.wait(c.requestTimeout())
		c.nodes.Drain(c.requestTimeout())
		c.waker.Close()
		c.tel.Close()
		err = c.nodes.Close(c.opts.NodeTimeout)
	})
	return err
}

// newClientID returns a random id for a Client, 72 bits in URL-safe base64.
func newClientID() string {
	var b [9]byte
	rand.Read(b[:]) // never returns an error (crypto/rand, Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// minOperatorTimeout is the least time each node gets to answer the
// operator's calls, MarkReady and Inspect: they are not lock operations, so
// they wait for a distant or loaded node far longer than NodeTimeout, whose
// small value serves the validity of locks.
const minOperatorTimeout = 3 * time.Second

// operatorTimeout bounds each node's answer to MarkReady and Inspect.
func (c *Client) operatorTimeout() time.Duration {
	return max(c.opts.NodeTimeout, minOperatorTimeout)
}

// quorumOf returns the quorum of n nodes: a majority, n/2+1.
func quorumOf(n int) int { return n/2 + 1 }

// listeners returns the conns that can hold a pub/sub connection.
func listeners(conns []Conn) []wait.Listener {
	var ls []wait.Listener
	for _, conn := range conns {
		if l, ok := conn.(wait.Listener); ok {
			ls = append(ls, l)
		}
	}
	return ls
}

func init() { dialreport.Attach = attachReport }

// attachReport records on client, a *Client, that its Dial checked the
// identities of the nodes it reached (New's check is not needed), warns
// Options.Logger of those whose server it could not identify, and records
// the nodes it could not reach (see attachUnreachable).
func attachReport(client any, r dialreport.Report) {
	c := client.(*Client)
	c.nodes.Identified()
	for _, i := range r.Unidentified {
		c.warnUnidentified(c.conns[i].Name())
	}
	attachUnreachable(c, r.Down)
}

// attachUnreachable records on c the nodes its Dial could not reach (see
// UnreachableAtDial), and holds each of them out of its calls until it is
// checked (see holdUntilIdentified).
func attachUnreachable(c *Client, down []dialreport.Down) {
	if len(down) == 0 {
		return
	}
	c.unreachable = make([]NodeResult, len(down))
	for i, d := range down {
		outcome := OutcomeError
		if nodes.IsTimeout(d.Err) {
			outcome = OutcomeTimeout
		}
		c.unreachable[i] = NodeResult{Node: c.conns[d.Node].Name(), Outcome: outcome, Err: d.Err, Latency: d.Latency}
		if d.Identify != nil {
			c.holdUntilIdentified(d)
		}
	}
}

// UnreachableAtDial returns the nodes that goredis.Dial or rueidis.Dial
// could not reach when it made the Client, each with the error of its
// PING, in client order; nil when every node answered, and for a Client
// from New, which does no I/O. Dial tolerates such nodes, as Redlock works
// while a majority answers, and each call tries them again. The list does
// not change afterwards: how a node fares since shows in each call's
// outcomes (Lock.Nodes, QuorumError) and in Inspect. Of several nodes, one
// that Dial could not reach votes only once it answered and is no other
// entry's server under another name (by its run_id, or its cluster's node
// ids): its calls fail unsent meanwhile, and for good with
// ErrDuplicateNode when it is another entry's, which Options.Logger is
// told.
func (c *Client) UnreachableAtDial() []NodeResult { return slices.Clone(c.unreachable) }

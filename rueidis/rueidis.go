// Package rueidis adapts rueidis clients to redlock.Conn, and dials nodes
// from URLs.
//
//	client, err := rueidis.Dial(ctx, []string{"redis://a:6379", "redis://b:6379", "redis://c:6379"}, nil)
//
// or, over clients of your own:
//
//	conns := []redlock.Conn{rueidis.New(client1), rueidis.New(client2), rueidis.New(client3)}
//	client, err := redlock.New(conns, nil)
//
// rueidis pipelines concurrent commands on one connection, which makes it the
// fastest adapter when many goroutines take locks at once.
//
// Dial and NewURL take the node URLs goredis.Dial takes, so that a program
// switches adapters without rewriting them: one server
// (redis://, rediss://, unix://), a Sentinel-managed master through its
// Sentinels (a master_name parameter; the master's password in the password
// parameter, the Sentinels' in the userinfo), or a whole Redis Cluster
// through its seed nodes (a cluster parameter):
//
//	redis://sentinel-a:26379?master_name=locks&addr=sentinel-b:26379&password=s3cret
//	redis://10.0.0.1:6379?cluster=1&addr=10.0.0.2:6379
//
// Dial fails when a node answers but refuses its URL (no password where
// one is needed, a wrong one, a database that does not exist), however few
// such nodes there are, and tolerates nodes that cannot be reached, which
// redlock.Client.UnreachableAtDial lists (see Dial).
//
// Their clients are set up for locking: no client-side retries or caching.
// Over clients of your own, pass DisableRetry and DisableCache likewise.
package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlock-go/redlock"
)

// Checked at compile time: Conn is a redlock.Conn with each of its optional
// capabilities.
var (
	_ redlock.Conn            = (*Conn)(nil)
	_ redlock.Listener        = (*Conn)(nil)
	_ redlock.ReplicaWaiter   = (*Conn)(nil)
	_ redlock.ClusterConn     = (*Conn)(nil)
	_ redlock.ContextHonourer = (*Conn)(nil)
	_ redlock.FunctionCaller  = (*Conn)(nil)
	_ redlock.ReadOnlyEvaler  = (*Conn)(nil)
)

// Conn is one Redis master reached through a rueidis client. It is safe for
// concurrent use.
type Conn struct {
	client  rueidis.Client // nil for a Conn from NewURL: see connect
	connect *connector     // makes the client of a Conn from NewURL
	name    string
	owned   bool
	cluster bool
	// tlsAddrs are the addresses a rediss:// URL names (the server, the
	// sentinels or the seeds), for Dial's probe.
	tlsAddrs []string
	tlsConf  *tls.Config
	// classicPubSub: the cluster refused SSUBSCRIBE as an unknown command
	// (Redis before 7.0), so Listen subscribes by SUBSCRIBE there, as its
	// nodes announce releases by PUBLISH.
	classicPubSub atomic.Bool
}

// New wraps client. The node is named after the addresses the client knows.
// A Sentinel client's master moves at each failover, and its options do
// not say which master set it follows: it is named "sentinel@" and the
// client's identity, so that two such clients are two nodes, and the name
// stays after a failover; NewNamed gives it a name that says more (its
// master set's, say). Close does not close client: its owner does.
func New(client rueidis.Client) *Conn {
	return NewNamed(client, nameOf(client))
}

// NewNamed is New with the node named name, in errors, logs and metrics
// and in the Client's check of nodes listed twice.
func NewNamed(client rueidis.Client, name string) *Conn {
	return &Conn{client: client, name: name, cluster: client.Mode() == rueidis.ClientModeCluster}
}

// NewOwned wraps client and takes ownership: Close closes it.
func NewOwned(client rueidis.Client) *Conn {
	c := New(client)
	c.owned = true
	return c
}

// Client returns the wrapped client. A Conn from NewURL makes its client
// on first use: until a command reached the node, Client returns nil.
func (c *Conn) Client() rueidis.Client {
	if c.connect != nil {
		return c.connect.current()
	}
	return c.client
}

// IsCluster reports whether the client runs in Redis Cluster mode (for a
// Conn from NewURL, whether the URL names a cluster): the redlock.Client
// then keeps every key of a lock in the lock key's hash slot, and sends
// each request by itself (see redlock.ClusterConn).
func (c *Conn) IsCluster() bool { return c.cluster }

// get returns the client, making it first for a Conn from NewURL that has
// none yet.
func (c *Conn) get(ctx context.Context) (rueidis.Client, error) {
	if c.connect != nil {
		return c.connect.client(ctx)
	}
	return c.client, nil
}

// Name returns the node's address.
func (c *Conn) Name() string { return c.name }

// HonoursContext reports true: rueidis gives up a request at its context's
// deadline, so the redlock.Client may ask a lone node from the caller's
// goroutine (see redlock.ContextHonourer). rueidis then closes the
// connection, when the request was alone on it: the Client gives the
// requests to a node of several half a second past its per-node timeout,
// so that a node slower than that timeout keeps its connection.
func (c *Conn) HonoursContext() bool { return true }

// Do sends one command; a nil reply is (nil, nil).
func (c *Conn) Do(ctx context.Context, args ...string) (any, error) {
	client, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return reply(sent(ctx, client, client.B().Arbitrary(args[0]).Args(args[1:]...).Build()))
}

// EvalSHA runs a script by EVALSHA, falling back to EVAL on NOSCRIPT.
func (c *Conn) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	client, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	b := client.B()
	v, err := sent(ctx, client, b.Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	if re, ok := rueidis.IsRedisErr(err); ok && re.IsNoScript() {
		v, err = sent(ctx, client, b.Eval().Script(source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	return reply(v, err)
}

// EvalSHARO runs a script that writes nothing by EVALSHA_RO, and by EVAL_RO
// when the server answers NOSCRIPT (see redlock.ReadOnlyEvaler), on a
// client that NewURL or Dial made, which sends every command to masters. A
// client of one's own (New) may send read-only commands to replicas
// (SendToReplicas, ReplicaOnly), which rueidis does not tell: it runs the
// script by EvalSHA instead.
func (c *Conn) EvalSHARO(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	if c.connect == nil {
		return c.EvalSHA(ctx, sha1, source, keys, args...)
	}
	client, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	b := client.B()
	v, err := sent(ctx, client, b.EvalshaRo().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	if re, ok := rueidis.IsRedisErr(err); ok && re.IsNoScript() {
		v, err = sent(ctx, client, b.EvalRo().Script(source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	}
	return reply(v, err)
}

// FCall calls a Redis function by FCALL.
func (c *Conn) FCall(ctx context.Context, function string, keys []string, args ...string) (any, error) {
	client, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	b := client.B()
	return reply(sent(ctx, client, b.Fcall().Function(function).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()))
}

// sent sends cmd, and again when the connection it went out on was closed
// by the server (CLIENT KILL, its idle timeout) before its answer came, up
// to resends times: rueidis dials again in its place, and a client may
// hold several connections to a node, each closed. rueidis keeps a command
// that failed so for sending again, as its own retries do. Every request the library sends may run twice: a
// repeated acquisition answers as the grant it was, an extension extends
// again, and a release run twice finds the key gone (it then reports the
// lock as not held there). go-redis does the same by its retries.
func sent(ctx context.Context, client rueidis.Client, cmd rueidis.Completed) (any, error) {
	v, err := client.Do(ctx, cmd).ToAny()
	for range resends {
		if !closedByServer(err) || ctx.Err() != nil {
			break
		}
		v, err = client.Do(ctx, cmd).ToAny()
	}
	return v, err
}

// resends bounds how many times sent sends a command again: more than
// the connections a rueidis client keeps to a node by default.
const resends = 8

// closedByServer reports an error that says the connection was closed
// under a request, not that the server cannot be reached.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// EvalSHAWait runs a script as EvalSHA does, then WAIT replicas timeout on
// the same connection (a dedicated one, as WAIT blocks), and returns the
// script's reply and WAIT's: the number of replicas that confirmed the
// writes in time. WAIT goes once the script's reply is in, and is given up
// when ctx ends: a server ends a WAIT only at its first tick past the
// timeout (10 a second by default), which may come after ctx's deadline;
// the script ran, and no replica confirmed it in time. The connection goes
// back to the pool once WAIT's reply is in. It needs a client of one
// server: a cluster client cannot send WAIT to the node that ran the
// script.
func (c *Conn) EvalSHAWait(ctx context.Context, replicas int, timeout time.Duration, sha1, source string, keys []string, args ...string) (any, int64, error) {
	client, err := c.get(ctx)
	if err != nil {
		return nil, 0, err
	}
	if len(client.Nodes()) != 1 {
		return nil, 0, errors.New("rueidis: WAIT after a script needs a client of one server")
	}
	dc, release := client.Dedicate()
	b := dc.B()
	v, err := dc.Do(ctx, b.Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()).ToAny()
	if re, ok := rueidis.IsRedisErr(err); ok && re.IsNoScript() {
		v, err = dc.Do(ctx, b.Eval().Script(source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()).ToAny()
	}
	if v, err = reply(v, err); err != nil {
		release()
		return v, 0, err
	}
	var acked int64
	var waitErr error
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		defer release()
		acked, waitErr = dc.Do(context.WithoutCancel(ctx), b.Wait().Numreplicas(int64(replicas)).Timeout(timeout.Milliseconds()).Build()).AsInt64()
	}()
	select {
	case <-waited:
		return v, acked, waitErr
	case <-ctx.Done():
		return v, 0, nil
	}
}

// Listen holds one pub/sub connection until ctx ends or the connection
// fails, and returns why: the Client wakes its waiting Acquire calls with the
// release announcements it receives (see redlock.Listener).
//
// In cluster mode it subscribes by SSUBSCRIBE, to shard channels: the
// client sends each channel's subscription to the master that serves its
// slot, on its connection to that master. It fails, and the Client
// subscribes again after a pause, when such a connection fails or when the
// cluster ends a subscription because the channel's slot moved (a
// resharding, or a failover). A cluster without sharded pub/sub (Redis
// before 7.0) gets SUBSCRIBE, from the first channel on when a node says so
// at the start (see knowsShardedPubSub), or else once its SSUBSCRIBE was
// refused.
func (c *Conn) Listen(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error {
	client, err := c.get(ctx)
	if err != nil {
		return err
	}
	if c.IsCluster() && !c.classicPubSub.Load() && c.knowsShardedPubSub(ctx, client) {
		return c.listenSharded(ctx, client, subscribe, unsubscribe, onMessage)
	}
	// Closed, not given back to rueidis's pool: giving it back unsubscribes
	// on it, and rueidis (v1.0.79) panics on the error replies of a node
	// busy with a long script (BUSY) to those unsubscribes. Listen runs
	// until the Client closes or the connection fails, so a fresh
	// connection for the next Listen costs nothing that matters.
	dc, _ := client.Dedicate()
	defer dc.Close()
	messages := make(chan rueidis.PubSubMessage, 64)
	lost := dc.SetPubSubHooks(pubSubHooks(ctx, messages))
	return listenClassic(ctx, dc, lost, messages, subscribe, unsubscribe, onMessage)
}

// pubSubHooks hands what a dedicated connection receives to messages: its
// messages, and a node's confirmation of a subscription as an empty
// message (see redlock.Listener).
func pubSubHooks(ctx context.Context, messages chan<- rueidis.PubSubMessage) rueidis.PubSubHooks {
	pass := func(m rueidis.PubSubMessage) {
		select {
		case messages <- m:
		case <-ctx.Done():
		}
	}
	return rueidis.PubSubHooks{
		OnMessage: pass,
		OnSubscription: func(s rueidis.PubSubSubscription) {
			if s.Kind == "subscribe" {
				pass(rueidis.PubSubMessage{Channel: s.Channel})
			}
		},
	}
}

// listenClassic subscribes and unsubscribes dc by SUBSCRIBE and
// UNSUBSCRIBE as asked, and passes on what it receives, until ctx ends or
// the connection is lost.
func listenClassic(ctx context.Context, dc rueidis.DedicatedClient, lost <-chan error, messages <-chan rueidis.PubSubMessage,
	subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error {
	for {
		var err error
		select {
		case ch := <-subscribe:
			err = dc.Do(ctx, dc.B().Subscribe().Channel(ch).Build()).Error()
		case ch := <-unsubscribe:
			err = dc.Do(ctx, dc.B().Unsubscribe().Channel(ch).Build()).Error()
		case m := <-messages:
			onMessage(m.Channel, m.Message)
		case err = <-lost:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}

// Close closes the client if it was created with NewOwned or NewURL.
func (c *Conn) Close() error {
	switch {
	case c.connect != nil:
		c.connect.close()
	case c.owned:
		c.client.Close()
	}
	return nil
}

func reply(v any, err error) (any, error) {
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	return v, err
}

// nameOf names the node of client (see New).
func nameOf(client rueidis.Client) string {
	if client.Mode() == rueidis.ClientModeSentinel {
		return fmt.Sprintf("sentinel@%p", client)
	}
	addrs := make([]string, 0, 1)
	for addr := range client.Nodes() {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}

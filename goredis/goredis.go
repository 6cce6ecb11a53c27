// Package goredis adapts go-redis v9 clients to redlock.Conn, and dials
// nodes from URLs.
//
//	client, err := goredis.Dial(ctx, []string{"redis://a:6379", "redis://b:6379", "redis://c:6379"}, nil)
//
// or, over clients of your own:
//
//	conns := []redlock.Conn{goredis.New(client1), goredis.New(client2), goredis.New(client3)}
//	client, err := redlock.New(conns, nil)
//
// Dial fails when a node answers but refuses its URL (no password where
// one is needed, a wrong one, a database that does not exist), however few
// such nodes there are, and tolerates nodes that cannot be reached, which
// redlock.Client.UnreachableAtDial lists (see Dial).
//
// The redlock.Client enforces its per-node timeout itself, whatever the
// go-redis client's settings. Give clients MaxRetries: -1 (the algorithm
// retries with fresh validity). The Client gives the requests of a client
// of several nodes half a second past its per-node timeout, as go-redis
// closes the connection of every reply that arrives after a deadline
// (ContextTimeoutEnabled): a slow node would cost a new connection per
// request. ParseURL returns options set up this way, with
// ContextTimeoutEnabled off. The exception is a lone
// node: the Client asks it from the caller's goroutine, saving a goroutine
// switch per request, only when go-redis gives up at the deadline itself,
// so Dial of a single URL turns ContextTimeoutEnabled on (a slow lone node
// fails every request anyway).
//
// go-redis writes lines through its own global logger (redis.SetLogger):
// one for each failed dial and, for a Sentinel-managed node, one for each
// Sentinel and master it finds, a successful Dial's included. This
// package leaves that logger alone unless SetLogger is called. A URL's pool holds 8 connections, so a node that is down costs at
// most 15 such lines per outage (8 failures in a row, and up to 7 dials
// already under way then): go-redis then probes it once a second in
// silence. SetLogger sends them to a *slog.Logger, and SetLogger(nil)
// drops them, as a test that kills nodes wants; the library's own records
// go to redlock.Options.Logger, and the rueidis adapter logs nothing.
//
// A node need not be one server. A URL with a master_name parameter names
// a Sentinel-managed master, through its Sentinels, and follows its
// failovers (the master's password goes in the password parameter, the
// Sentinels' in the userinfo):
//
//	redis://sentinel-a:26379?master_name=locks&addr=sentinel-b:26379&password=s3cret
//
// A URL with a cluster parameter names a whole Redis Cluster, through its
// seed nodes; the redlock.Client then keeps each lock's keys in its hash
// slot:
//
//	redis://10.0.0.1:6379?cluster=1&addr=10.0.0.2:6379
//
// # TLS
//
// A rediss:// URL reaches its node over TLS. The node's certificate is
// checked against the system's CA certificates (which SSL_CERT_FILE and
// SSL_CERT_DIR replace for the whole program), or against those of the
// PEM file that the tls_ca parameter names. A server that asks clients
// for a certificate (tls-auth-clients yes, redis-server's default) gets
// the one of the tls_cert file, whose private key is the tls_key file.
// These are redis-cli's --cacert, --cert and --key:
//
//	rediss://:s3cret@10.0.0.1:6380?tls_ca=/etc/redlock/ca.pem&tls_cert=/etc/redlock/client.pem&tls_key=/etc/redlock/client-key.pem
//
// The files are read when the URL is: one that is missing or holds no
// usable certificate or key fails Dial, NewURL and ParseURL at once. Dial
// also fails, naming the node, when the handshake fails on a certificate:
// a CA that did not sign the server's, an expired certificate, a client
// certificate missing or refused. Both errors wrap ErrTLS and
// ErrInvalidURL; they name the files, never what a key file holds.
//
// The rueidis package's Dial and NewURL take the same forms of URL, so
// that a program switches adapters without rewriting them, but for the
// tuning parameters, which are each client library's own. New takes a
// *redis.Client, a failover client or a *redis.ClusterClient alike.
package goredis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

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

// Conn is one Redis master reached through a go-redis client. It is safe for
// concurrent use.
type Conn struct {
	client  redis.UniversalClient
	name    string
	owned   bool
	digests boxes
	// classicPubSub: the cluster refused SSUBSCRIBE as an unknown command
	// (Redis before 7.0), so Listen subscribes by SUBSCRIBE there, as its
	// nodes announce releases by PUBLISH.
	classicPubSub atomic.Bool
	// tlsAddrs are the sentinels or seeds that a rediss:// URL of a
	// Sentinel-managed master or a Redis Cluster names, with tlsConf, for
	// Dial's probe (see probeTLS).
	tlsAddrs []string
	tlsConf  *tls.Config
}

// New wraps client. The node is named after the client's address. Close does
// not close client: its owner does. A go-redis failover client (Sentinel)
// does not say which master it reaches: it is named "FailoverClient@" and
// the client's identity, so that two such clients are two nodes; NewNamed
// gives it a name that says more (its master set's, say).
func New(client redis.UniversalClient) *Conn {
	return &Conn{client: client, name: nameOf(client)}
}

// NewNamed is New with the node named name, in errors, logs and metrics
// and in the Client's check of nodes listed twice: for a client whose
// options do not say where it goes, as a failover client's do not.
func NewNamed(client redis.UniversalClient, name string) *Conn {
	return &Conn{client: client, name: name}
}

// NewOwned wraps client and takes ownership: Close closes it.
func NewOwned(client redis.UniversalClient) *Conn {
	c := New(client)
	c.owned = true
	return c
}

// Client returns the wrapped client.
func (c *Conn) Client() redis.UniversalClient { return c.client }

// IsCluster reports whether the client is a Redis Cluster client: the
// redlock.Client then keeps every key of a lock in the lock key's hash
// slot, and sends each request by itself (see redlock.ClusterConn).
func (c *Conn) IsCluster() bool {
	_, ok := c.client.(*redis.ClusterClient)
	return ok
}

// Name returns the node's address.
func (c *Conn) Name() string { return c.name }

// HonoursContext reports whether the go-redis client gives up a request at
// its context's deadline (ContextTimeoutEnabled). When it does not, the
// redlock.Client asks the node from a goroutine of its own even when it is
// the only node, so that its per-node timeout still holds (see
// redlock.ContextHonourer).
func (c *Conn) HonoursContext() bool {
	switch client := c.client.(type) {
	case *redis.Client:
		return client.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return client.Options().ContextTimeoutEnabled
	}
	return false
}

// Do sends one command; a nil reply is (nil, nil).
func (c *Conn) Do(ctx context.Context, args ...string) (any, error) {
	v, err := c.client.Do(ctx, toAny(args)...).Result()
	c.reloadSlotsAfter(err)
	return reply(v, err)
}

// EvalSHA runs a script by EVALSHA, falling back to EVAL on NOSCRIPT. The
// command is built in one argument slice, which the fallback reuses. Keys
// and arguments go in as pointers into keys and args (see arg), which box
// into the slice without allocating; the digest is boxed once per script.
func (c *Conn) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	cmdArgs := c.scriptArgs("evalsha", sha1, keys, args)
	v, err := c.eval(ctx, cmdArgs, len(keys))
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmdArgs[0], cmdArgs[1] = "eval", source
		v, err = c.eval(ctx, cmdArgs, len(keys))
	}
	return reply(v, err)
}

// EvalSHARO runs a script that writes nothing by EVALSHA_RO, and by EVAL_RO
// when the server answers NOSCRIPT (see redlock.ReadOnlyEvaler). A cluster
// client that sends read-only commands to replicas (ReadOnly,
// RouteByLatency, RouteRandomly) runs it by EvalSHA instead, on the master.
func (c *Conn) EvalSHARO(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	if cluster, ok := c.client.(*redis.ClusterClient); ok {
		if o := cluster.Options(); o.ReadOnly || o.RouteByLatency || o.RouteRandomly {
			return c.EvalSHA(ctx, sha1, source, keys, args...)
		}
	}
	cmdArgs := c.scriptArgs("evalsha_ro", sha1, keys, args)
	v, err := c.eval(ctx, cmdArgs, len(keys))
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmdArgs[0], cmdArgs[1] = "eval_ro", source
		v, err = c.eval(ctx, cmdArgs, len(keys))
	}
	return reply(v, err)
}

// FCall calls a Redis function by FCALL, its arguments boxed as EvalSHA's
// are (the function's name once per name).
func (c *Conn) FCall(ctx context.Context, function string, keys []string, args ...string) (any, error) {
	return reply(c.eval(ctx, c.scriptArgs("fcall", function, keys, args), len(keys)))
}

// scriptArgs builds the arguments of command (EVALSHA or FCALL) name
// numkeys keys... args...: keys and arguments as pointers into keys and
// args (see arg), which box into the slice without allocating; name boxed
// once per name.
func (c *Conn) scriptArgs(command, name string, keys, args []string) []any {
	cmdArgs := make([]any, 3+len(keys)+len(args))
	cmdArgs[0], cmdArgs[1], cmdArgs[2] = command, c.digests.boxed(name), len(keys)
	for i := range keys {
		cmdArgs[3+i] = (*arg)(&keys[i])
	}
	for i := range args {
		cmdArgs[3+len(keys)+i] = (*arg)(&args[i])
	}
	return cmdArgs
}

// EvalSHAWait runs a script as EvalSHA does, then WAIT replicas timeout on
// the same connection, and returns the script's reply and WAIT's: the
// number of replicas that confirmed the writes in time. WAIT goes once the
// script's reply is in, and is given up when ctx ends: a server ends a
// WAIT only at its first tick past the timeout (10 a second by default),
// which may come after ctx's deadline; the script ran, and no replica
// confirmed it in time. The connection goes back to the pool once WAIT's
// reply is in. It needs a client of one server (*redis.Client, Sentinel's
// failover client included): a cluster client cannot send WAIT to the
// node that ran the script.
func (c *Conn) EvalSHAWait(ctx context.Context, replicas int, timeout time.Duration, sha1, source string, keys []string, args ...string) (any, int64, error) {
	client, ok := c.client.(*redis.Client)
	if !ok {
		return nil, 0, errors.New("goredis: WAIT after a script needs a client of one server (*redis.Client)")
	}
	conn := client.Conn()
	v, err := evalOn(ctx, conn, "evalsha", sha1, keys, args)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = evalOn(ctx, conn, "eval", source, keys, args)
	}
	if v, err = reply(v, err); err != nil {
		conn.Close()
		return v, 0, err
	}
	wait := redis.NewIntCmd(ctx, "wait", replicas, timeout.Milliseconds())
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		defer conn.Close()
		_ = conn.Process(context.WithoutCancel(ctx), wait)
	}()
	select {
	case <-waited:
		return v, wait.Val(), wait.Err()
	case <-ctx.Done():
		return v, 0, nil
	}
}

// evalOn runs script by command (EVALSHA or EVAL) on conn.
func evalOn(ctx context.Context, conn *redis.Conn, command, script string, keys, args []string) (any, error) {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, command, script, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	for _, a := range args {
		cmdArgs = append(cmdArgs, a)
	}
	cmd := redis.NewCmd(ctx, cmdArgs...)
	_ = conn.Process(ctx, cmd)
	return cmd.Result()
}

func (c *Conn) eval(ctx context.Context, cmdArgs []any, keys int) (any, error) {
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if keys > 0 {
		cmd.SetFirstKeyPos(3)
	}
	_ = c.client.Process(ctx, cmd)
	v, err := cmd.Result()
	c.reloadSlotsAfter(err)
	return v, err
}

// Listen holds one pub/sub connection until ctx ends or the connection
// fails, and returns why: the Client wakes its waiting Acquire calls with the
// release announcements it receives (see redlock.Listener).
//
// Over a Redis Cluster client it subscribes by SSUBSCRIBE, to shard
// channels, on one connection per master: each channel's subscription goes
// to the master that serves its slot. It fails, and the Client subscribes
// again after a pause, when a shard's connection fails, when its master
// stays silent past a PING, or when the cluster ends a subscription because
// the channel's slot moved (a resharding, or a failover); it then has the
// client reload the slot map, so that the next subscriptions reach the new
// masters. A cluster without sharded pub/sub (Redis before 7.0) gets
// SUBSCRIBE, from the first channel on when a node says so at the start
// (see knowsShardedPubSub), or else once its SSUBSCRIBE was refused.
func (c *Conn) Listen(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error {
	if cluster, ok := c.client.(*redis.ClusterClient); ok && !c.classicPubSub.Load() && c.knowsShardedPubSub(ctx, cluster) {
		return c.listenSharded(ctx, cluster, subscribe, unsubscribe, onMessage)
	}
	ps := c.client.Subscribe(ctx)
	defer ps.Close()
	var messages <-chan any // nil until the first subscription
	for {
		select {
		case ch := <-subscribe:
			if err := ps.Subscribe(ctx, ch); err != nil {
				return err
			}
			if messages == nil {
				messages = ps.ChannelWithSubscriptions()
			}
		case ch := <-unsubscribe:
			if err := ps.Unsubscribe(ctx, ch); err != nil {
				return err
			}
		case m, ok := <-messages:
			if !ok {
				return errors.New("goredis: subscription closed")
			}
			deliver(m, onMessage)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// deliver passes on a message, and a node's confirmation of a subscription
// as an empty message (see redlock.Listener).
func deliver(m any, onMessage func(channel, payload string)) {
	switch m := m.(type) {
	case *redis.Message:
		onMessage(m.Channel, m.Payload)
	case *redis.Subscription:
		if m.Kind == "subscribe" || m.Kind == "ssubscribe" {
			onMessage(m.Channel, "")
		}
	}
}

// Close closes the client if it was created with NewOwned.
func (c *Conn) Close() error {
	if !c.owned {
		return nil
	}
	return c.client.Close()
}

func reply(v any, err error) (any, error) {
	switch {
	case err == redis.Nil:
		return nil, nil
	case errors.Is(err, redis.Nil):
		// Not a reply: a failover client whose Sentinels answered that
		// they know no master by its name wraps their nil answer.
		return nil, fmt.Errorf("%w (no such master: the Sentinels know no master by this URL's master_name)", err)
	}
	return v, err
}

func toAny(args []string) []any {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return a
}

// failoverAddr is the address go-redis gives a failover client's options.
const failoverAddr = "FailoverClient"

// nameOf names a client after the server(s) it reaches, without credentials.
func nameOf(client redis.UniversalClient) string {
	switch c := client.(type) {
	case *redis.Client:
		o := c.Options()
		switch {
		case o.Network == "unix":
			return "unix:" + o.Addr
		case o.Addr == failoverAddr:
			return fmt.Sprintf("%s@%p", failoverAddr, c)
		}
		return o.Addr
	case *redis.ClusterClient:
		if len(c.Options().Addrs) == 0 {
			// A failover cluster client, or one of ClusterSlots: no seed
			// says where it goes.
			return fmt.Sprintf("cluster@%p", c)
		}
		addrs := append([]string(nil), c.Options().Addrs...)
		sort.Strings(addrs)
		return "cluster:" + strings.Join(addrs, ",")
	case *redis.Ring:
		addrs := make([]string, 0, len(c.Options().Addrs))
		for _, a := range c.Options().Addrs {
			addrs = append(addrs, a)
		}
		sort.Strings(addrs)
		return "ring:" + strings.Join(addrs, ",")
	default:
		return "go-redis client"
	}
}

// arg is a command argument that go-redis writes, logs and routes as the
// string it points to. Boxing a pointer into an interface allocates
// nothing, where boxing a string allocates a copy of its header; go-redis
// writes an arg through encoding.BinaryMarshaler, and prints it (in command
// strings, hooks and traces) and reads cluster keys through fmt.Stringer.
type arg string

// MarshalBinary returns the string's bytes without copying them: go-redis
// only reads them, while writing the command.
func (a *arg) MarshalBinary() ([]byte, error) {
	return unsafe.Slice(unsafe.StringData(string(*a)), len(*a)), nil
}

// String returns the argument.
func (a *arg) String() string { return string(*a) }

// maxBoxes bounds the strings a boxes keeps: a Client runs a handful of
// scripts, and a caller running many more gets them boxed per call.
const maxBoxes = 64

// boxes keeps strings boxed as interface values, so that a string sent with
// every call (a script's digest) is not boxed anew each time. Readers take a
// copy-on-write map without locking.
type boxes struct {
	mu    sync.Mutex
	byKey atomic.Pointer[map[string]any]
}

// boxed returns s as an interface value, from the cache when it is there.
func (b *boxes) boxed(s string) any {
	if m := b.byKey.Load(); m != nil {
		if v, ok := (*m)[s]; ok {
			return v
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.byKey.Load()
	if old == nil {
		old = new(map[string]any)
	}
	if v, ok := (*old)[s]; ok {
		return v
	}
	if len(*old) >= maxBoxes {
		return s
	}
	next := make(map[string]any, len(*old)+1)
	for k, v := range *old {
		next[k] = v
	}
	var v any = s
	next[s] = v
	b.byKey.Store(&next)
	return v
}

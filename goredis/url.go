package goredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/nodecheck"
	"github.com/redlock-go/redlock/internal/nodeurl"
)

// ErrTLS means a rediss:// node's TLS set-up is wrong: a file that its
// tls_ca, tls_cert or tls_key parameter names cannot be used (Dial,
// NewURL and ParseURL fail), or the node and the client do not accept each
// other's certificates (Dial fails, naming the node). Errors that wrap it
// wrap ErrInvalidURL too. It is the same value as rueidis.ErrTLS.
var ErrTLS = nodeurl.ErrTLS

// ErrInvalidURL means a node URL could not be parsed, or names something
// it cannot reach as written: Dial found the node refusing it (its
// credentials, its database), say. It is the same value as
// rueidis.ErrInvalidURL.
var ErrInvalidURL = nodeurl.ErrInvalidURL

// connIOTimeout bounds a single socket read or write on a node connection.
// The Client never waits that long with the default MaxNodeTimeout (see
// redlock.Options.NodeTimeout and MaxNodeTimeout); it only decides when a
// connection to a hung node is given up and replaced.
const connIOTimeout = time.Second

// lockPoolSize is the connection pool of a node that a URL names, unless
// its pool_size parameter says otherwise. The Client keeps at most two
// script calls in flight per node (batching the rest), so a few
// connections serve it; go-redis's default grows with the cores (10 per
// core). It also bounds go-redis's own log lines for a node that is down:
// go-redis logs each failed dial through its global logger until PoolSize
// dials in a row have failed, then probes the node once a second in
// silence and fails requests at once. Up to PoolSize dials run at once, so
// the dials under way at the last of those failures log too: at most
// 2×PoolSize−1 lines per outage.
const lockPoolSize = 8

// Dial returns a redlock.Client over one go-redis connection pool per URL:
// redis://[[user]:password@]host[:port][/db], rediss:// for TLS, or
// unix://[[user]:password@]/path?db=N, with go-redis's query parameters,
// and the Sentinel (master_name) and Redis Cluster (cluster) forms of
// NewURL. The rueidis package's Dial takes the same forms of URL, with its
// own tuning parameters.
//
// Dial pings every node at once, bounded by ctx and a few seconds; once
// a majority answered, the others get as long again, at least a quarter of
// a second, and a node that has not answered by then counts as timing
// out. What it tolerates: nodes that cannot be reached (refused connections, timeouts, a
// server still loading), however many, since Redlock works while a majority
// answers and each call tries them again; the Client lists them, with their
// errors, in Client.UnreachableAtDial. What it refuses, naming each node: a
// node that answers but refuses its URL (no password where one is needed, a
// wrong one, a database that does not exist, a cluster URL to a server
// outside cluster mode, a user that may run no script, or not a command
// the scripts run on the library's keys, a server with such a command
// renamed away, anything but PONG, an answer that is no RESP), a replica or a Sentinel named as a node, be
// it one node of many, and a rediss:// node whose port answers in
// plaintext, both wrapping ErrInvalidURL; a rediss:// node whose TLS
// handshake fails on a certificate (a CA that did not sign the server's, an
// expired certificate, a client certificate missing or refused), with
// ErrTLS and ErrInvalidURL; two entries that reach one server under
// different names (localhost and 127.0.0.1, say: one address once resolved,
// whether or not the server answers; or the same run_id), or one Redis
// Cluster (a node id in common), with redlock.ErrDuplicateNode; a node that
// does not answer then casts no vote until it answers and its run_id is no
// other entry's (see Client.UnreachableAtDial). Errors
// never contain passwords; a malformed URL wraps ErrInvalidURL (a password
// must have '#', '/', '?' and '@' percent-encoded: %23, %2F, %3F, %40), a
// nil ctx fails with redlock.ErrNilContext, a ctx that has ended with its
// error, and the errors of redlock.New are returned as they are. opts may
// be nil for the defaults. Close the Client when done: it closes the pools.
func Dial(ctx context.Context, urls []string, opts *redlock.Options) (*redlock.Client, error) {
	lone := len(urls) == 1
	newConn := func(raw string) (redlock.Conn, error) { return newURL(raw, lone) }
	return nodecheck.Dial(ctx, urls, opts, newConn, probeTLS)
}

// NewURL returns a Conn over a new go-redis pool for one node URL, set up by
// ParseURL, and owning it: Close closes the pool. It does no I/O. A URL
// with a master_name parameter names a Sentinel-managed master: the Conn
// then follows its failovers; one with a cluster parameter names a Redis
// Cluster (see the package documentation for both).
func NewURL(raw string) (*Conn, error) { return newURL(raw, false) }

// newURL is NewURL; lone turns go-redis's ContextTimeoutEnabled on, for a
// node that is a Client's only one (see the package documentation).
func newURL(raw string, lone bool) (*Conn, error) {
	u, err := nodeurl.Parse(raw)
	if err != nil {
		return nil, err
	}
	switch {
	case isSentinelURL(u):
		return newSentinelConn(raw, u, lone)
	case isClusterURL(u):
		return newClusterConn(raw, u, lone)
	}
	o, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	o.ContextTimeoutEnabled = lone
	return NewOwned(redis.NewClient(o)), nil
}

// ParseURL parses a node URL into go-redis options, set up for locking: no
// client-side retries of commands or dials (the algorithm retries itself,
// with fresh validity), and connections kept across late replies (the
// Client enforces the per-node timeout itself). A rediss:// URL takes the
// tls_ca, tls_cert and tls_key parameters (see the package
// documentation), which ParseURL reads into the options' TLSConfig.
// Errors wrap ErrInvalidURL (and ErrTLS for the TLS parameters) and never
// contain the password.
func ParseURL(raw string) (*redis.Options, error) {
	u, err := nodeurl.Parse(raw)
	if err != nil {
		return nil, err
	}
	stripped, files, err := nodeurl.SplitTLS(raw, u)
	if err != nil {
		return nil, err
	}
	o, err := redis.ParseURL(stripped)
	if err != nil {
		return nil, nodeurl.Invalid(raw, u, err)
	}
	if err := files.Apply(raw, o.TLSConfig); err != nil {
		return nil, err
	}
	setUpForLocking(o)
	return o, nil
}

// setUpForLocking adjusts go-redis options for lock traffic.
func setUpForLocking(o *redis.Options) {
	o.MaxRetries = -1
	// The per-node timeout is enforced by the Client, which stops waiting
	// for a node when it passes. Letting go-redis honour that deadline too
	// would make it close the connection of every late reply and dial anew:
	// under load or with one slow node, a storm of reconnections. A late
	// reply instead completes within connIOTimeout and keeps its connection.
	o.ContextTimeoutEnabled = false
	if o.ReadTimeout == 0 {
		o.ReadTimeout = connIOTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = connIOTimeout
	}
	o.DisableIdentity = true // one round trip less per new connection
	// One dial per request: a node that refuses connections must fail fast,
	// not spend the per-node timeout on go-redis's own dial retries.
	o.DialerRetries = 1
	o.DialerRetryTimeout = time.Millisecond
	if o.PoolSize == 0 {
		o.PoolSize = lockPoolSize
	}
}

// RedactURL returns raw with any password replaced by "xxxxx", in the
// userinfo and in the password and sentinel_password parameters, also when
// raw does not parse.
func RedactURL(raw string) string { return nodeurl.Redact(raw) }

// probeTLS is Dial's probe of a node that did not answer PING
// (see nodecheck.Probe): for a *redis.Client set up for TLS over TCP (a
// rediss:// URL), or the sentinels or seeds of a rediss:// URL, it returns
// an error when a port answers in plaintext, or when the TLS handshake
// fails on a certificate.
func probeTLS(conn redlock.Conn) error {
	c, ok := conn.(*Conn)
	if !ok {
		return nil
	}
	if c.tlsAddrs != nil {
		return nodecheck.ProbeTLSAll(c.Name(), c.tlsAddrs, c.tlsConf)
	}
	client, ok := c.client.(*redis.Client)
	if !ok || client.Options().TLSConfig == nil || client.Options().Network == "unix" {
		return nil
	}
	return nodecheck.ProbeTLS(c.Name(), client.Options().Addr, client.Options().TLSConfig)
}

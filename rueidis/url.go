package rueidis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/nodecheck"
	"github.com/redlock-go/redlock/internal/nodeurl"
)

// ErrTLS means a rediss:// node's TLS set-up is wrong: a file that its
// tls_ca, tls_cert or tls_key parameter names cannot be used (Dial and
// NewURL fail), or the node and the client do not accept each other's
// certificates (Dial fails, naming the node). Errors that wrap it wrap
// ErrInvalidURL too. It is the same value as goredis.ErrTLS.
var ErrTLS = nodeurl.ErrTLS

// ErrInvalidURL means a node URL could not be parsed, or names something
// it cannot reach as written: Dial found the node refusing it (its
// credentials, its database), say. It is the same value as
// goredis.ErrInvalidURL.
var ErrInvalidURL = nodeurl.ErrInvalidURL

// connIOTimeout bounds each wait for a reply on a node connection
// (rueidis's ConnWriteTimeout, which its background PINGs use too), as
// goredis's connIOTimeout does a read. The Client never waits that long
// with the default MaxNodeTimeout (see redlock.Options.NodeTimeout and
// MaxNodeTimeout); it only decides when a connection to a hung node is
// given up and replaced. rueidis's default, ten seconds,
// would keep a hung connection that long.
const connIOTimeout = time.Second

// sentinelRefreshInterval is how often a Sentinel node asks its Sentinels
// which server is the master, besides following their +switch-master
// announcements: without it, an announcement missed while a connection
// was down leaves the node on the old master until the program restarts.
// Shorter finds the new master sooner after such a miss, at the cost of
// more queries to the Sentinels.
const sentinelRefreshInterval = 5 * time.Second

// Dial returns a redlock.Client over one rueidis client per URL, taking the
// same forms of URL as goredis.Dial: redis://[[user]:password@]host[:port][/db],
// rediss:// for TLS, or unix://[[user]:password@]/path?db=N; a master_name
// parameter for a Sentinel-managed master, a cluster parameter for a
// Redis Cluster (see NewURL). The tuning parameters are each client
// library's own: go-redis's read_timeout or pool_size mean nothing to
// rueidis, and NewURL refuses them.
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
// be nil for the defaults. Close the Client when done: it closes the
// rueidis clients.
func Dial(ctx context.Context, urls []string, opts *redlock.Options) (*redlock.Client, error) {
	newConn := func(raw string) (redlock.Conn, error) { return NewURL(raw) }
	return nodecheck.Dial(ctx, urls, opts, newConn, probeTLS)
}

// NewURL returns a Conn over a new rueidis client for one node URL, in the
// forms goredis.NewURL takes, and owning it: Close closes it. It does no
// I/O: the client connects on first use, and a node that cannot be
// reached then fails the call and is tried again by the next one.
//
// A URL with a master_name parameter names a Sentinel-managed master: its
// host (and each addr parameter) is a Sentinel, the userinfo the
// Sentinels' credentials, and the master's own go in the username and
// password parameters. The Conn follows failovers.
//
//	redis://sentinel-a:26379/0?master_name=locks&addr=sentinel-b:26379&password=s3cret
//
// A URL with a cluster parameter (cluster=1) names a whole Redis Cluster,
// through its seed nodes: the host and each addr parameter.
//
//	redis://10.0.0.1:6379?cluster=1&addr=10.0.0.2:6379
//
// Otherwise the URL names one server, which is never taken for a cluster.
// Besides those, NewURL takes rueidis.ParseURL's parameters db,
// dial_timeout, write_timeout, skip_verify, protocol and client_name, the
// TLS files of a rediss:// URL as goredis takes them (tls_ca, tls_cert,
// tls_key: see the goredis package documentation), and refuses any other. The client is set up for locking: no client-side
// retries (the algorithm retries itself, with fresh validity), no
// client-side caching, and a connection whose replies stop coming is
// dropped after a second. Errors wrap ErrInvalidURL and never contain a
// password.
func NewURL(raw string) (*Conn, error) {
	u, err := nodeurl.Parse(raw)
	if err != nil {
		return nil, err
	}
	stripped, files, err := nodeurl.SplitTLS(raw, u)
	if err != nil {
		return nil, err
	}
	f, err := formOf(u)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidURL, nodeurl.Redact(raw), err)
	}
	opt, err := rueidis.ParseURL(withoutEmptyPath(stripped, u))
	if err != nil {
		return nil, nodeurl.Invalid(raw, u, err)
	}
	if err := files.Apply(raw, opt.TLSConfig); err != nil {
		return nil, err
	}
	f.setUp(&opt, u)
	setUpForLocking(&opt)
	c := &Conn{name: f.name(opt, u), owned: true, cluster: f == clusterForm}
	if opt.TLSConfig != nil {
		c.tlsAddrs, c.tlsConf = opt.InitAddress, opt.TLSConfig
	}
	c.connect = &connector{connect: func() (rueidis.Client, error) { return f.connect(opt) }}
	return c, nil
}

// withoutEmptyPath returns raw without the "/" that ends its host when no
// database follows ("redis://host:6379/"), which rueidis.ParseURL refuses
// as an empty database number, and goredis takes as database 0.
func withoutEmptyPath(raw string, u *url.URL) string {
	if u.Scheme == "unix" || u.Path != "/" {
		return raw
	}
	before, after, _ := strings.Cut(raw, "?")
	if after != "" {
		after = "?" + after
	}
	return strings.TrimSuffix(before, "/") + after
}

// form is the kind of deployment a node URL names.
type form int

const (
	serverForm   form = iota // one server
	sentinelForm             // a Sentinel-managed master: master_name
	clusterForm              // a Redis Cluster: cluster
)

// commonParams are the query parameters of rueidis.ParseURL that every form
// takes. Its others are set for locking (max_retries, client_cache), or
// named as goredis names them (master_set is master_name).
var commonParams = []string{"db", "dial_timeout", "write_timeout", "skip_verify", "protocol", "client_name",
	nodeurl.ParamCA, nodeurl.ParamCert, nodeurl.ParamKey}

// formParams are the query parameters of each form beyond commonParams.
var formParams = map[form][]string{
	sentinelForm: {"master_name", "addr", "username", "password"},
	clusterForm:  {"cluster", "addr"},
}

// formOf returns the form of u, after checking its parameters.
func formOf(u *url.URL) (form, error) {
	q := u.Query()
	f := serverForm
	switch {
	case q.Has("master_set"):
		return f, errors.New("name the Sentinel master with master_name")
	case q.Has("master_name") && q.Has("cluster"):
		return f, errors.New("master_name and cluster exclude each other")
	case q.Has("master_name") && q.Get("master_name") == "":
		return f, errors.New("master_name is empty")
	case q.Has("master_name"):
		f = sentinelForm
	case q.Has("cluster"):
		f = clusterForm
	}
	if f != serverForm && u.Scheme == "unix" {
		return f, errors.New("a unix socket is one server: it takes no master_name or cluster")
	}
	if u.Scheme == "unix" && u.Path == "" {
		return f, errors.New("no socket path")
	}
	for k := range q {
		if !slices.Contains(commonParams, k) && !slices.Contains(formParams[f], k) {
			return f, fmt.Errorf("unknown parameter %s", k)
		}
	}
	return f, nil
}

// setUp moves what rueidis.ParseURL read from u where the form wants it.
func (f form) setUp(opt *rueidis.ClientOption, u *url.URL) {
	switch f {
	case serverForm:
		opt.ForceSingleClient = true
	case sentinelForm:
		q := u.Query()
		opt.Sentinel.MasterSet = q.Get("master_name")
		opt.Sentinel.Username, opt.Sentinel.Password = opt.Username, opt.Password
		opt.Username, opt.Password = q.Get("username"), q.Get("password")
		opt.Sentinel.TLSConfig, opt.Sentinel.Dialer = opt.TLSConfig, opt.Dialer
		opt.Sentinel.TopologyRefreshInterval = sentinelRefreshInterval
	}
}

// name names a node of form f, after the addresses of its URL u, as
// goredis names it.
func (f form) name(opt rueidis.ClientOption, u *url.URL) string {
	addrs := strings.Join(opt.InitAddress, ",")
	switch {
	case f == sentinelForm:
		return opt.Sentinel.MasterSet + "@sentinel:" + addrs
	case f == clusterForm:
		return "cluster:" + addrs
	case u.Scheme == "unix":
		return "unix:" + addrs
	}
	return addrs
}

// connect makes a client of form f with opt. A
// server's client comes back even when its first dial fails: it dials
// again on use. A cluster URL to a server that is not a cluster fails, as
// it does with goredis, instead of falling back to one server.
func (f form) connect(opt rueidis.ClientOption) (rueidis.Client, error) {
	client, err := rueidis.NewClient(opt)
	switch {
	case f == serverForm && client != nil:
		return client, nil
	case err != nil:
		return nil, err
	case f == clusterForm && client.Mode() != rueidis.ClientModeCluster:
		client.Close()
		//lint:ignore ST1005 the server's own words, which Dial's node check knows
		return nil, errors.New("This instance has cluster support disabled: drop the cluster parameter of its URL")
	}
	return client, nil
}

// setUpForLocking adjusts rueidis options for lock traffic.
func setUpForLocking(o *rueidis.ClientOption) {
	o.DisableRetry = true // the algorithm retries itself, with fresh validity
	// Client-side caching serves no lock call, and turning it on costs a
	// CLIENT TRACKING round trip per connection, which an ACL may refuse.
	o.DisableCache = true
	if o.ConnWriteTimeout == 0 {
		o.ConnWriteTimeout = connIOTimeout
	}
}

// probeTLS is Dial's probe of a node that did not answer PING
// (see nodecheck.Probe): for a Conn from a rediss:// URL, it returns an
// error when a port the URL names (the server, the sentinels or the
// seeds) answers in plaintext, or when the TLS handshake fails on a
// certificate.
func probeTLS(conn redlock.Conn) error {
	c, ok := conn.(*Conn)
	if !ok || len(c.tlsAddrs) == 0 {
		return nil
	}
	if len(c.tlsAddrs) == 1 {
		return nodecheck.ProbeTLS(c.Name(), c.tlsAddrs[0], c.tlsConf)
	}
	return nodecheck.ProbeTLSAll(c.Name(), c.tlsAddrs, c.tlsConf)
}

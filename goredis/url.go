package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
)

// ErrInvalidURL means a node URL could not be parsed.
var ErrInvalidURL = errors.New("redlock: invalid node URL")

// connIOTimeout bounds a single socket read or write on a node connection.
// The Client never waits that long (see redlock.Options.NodeTimeout); it
// only decides when a connection to a hung node is given up and replaced.
const connIOTimeout = time.Second

// dialCheckTimeout bounds Dial's first PING to each node: long enough for a
// TLS handshake across a region, short enough that a typo fails fast.
const dialCheckTimeout = 3 * time.Second

// Dial returns a redlock.Client over one go-redis connection pool per URL:
// redis://[[user]:password@]host[:port][/db], rediss:// for TLS, or
// unix://[[user]:password@]/path?db=N, with go-redis's query parameters.
//
// Dial pings every node at once, bounded by ctx and a few seconds. A node that
// rejects the credentials, or answers anything but PONG, fails the call; an
// unreachable node does not, since Redlock works while a majority is up (its
// failures show in each call's per-node outcomes). Two entries that reach
// one server under different names (localhost and 127.0.0.1, say: the same
// run_id) fail the call with redlock.ErrDuplicateNode. A rediss:// node whose
// port answers in plaintext fails the call too, wrapping ErrInvalidURL.
// Errors never contain passwords; a malformed URL wraps ErrInvalidURL, and the errors of
// redlock.New are returned as they are. opts may be nil for the defaults.
// Close the Client when done: it closes the pools.
func Dial(ctx context.Context, urls []string, opts *redlock.Options) (*redlock.Client, error) {
	conns := make([]redlock.Conn, 0, len(urls))
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, raw := range urls {
		c, err := NewURL(raw)
		if err != nil {
			closeAll()
			return nil, err
		}
		conns = append(conns, c)
	}
	client, err := redlock.New(conns, opts)
	if err != nil {
		closeAll()
		return nil, err
	}
	if err := checkNodes(ctx, conns); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// NewURL returns a Conn over a new go-redis pool for one node URL, set up by
// ParseURL, and owning it: Close closes the pool. It does no I/O. A URL
// with a master_name parameter names a Sentinel-managed master (see
// sentinel.go): the Conn then follows its failovers; one with a cluster
// parameter names a Redis Cluster (see cluster.go).
func NewURL(raw string) (*Conn, error) {
	if u, err := url.Parse(raw); err == nil && isSentinelURL(u) {
		return newSentinelConn(raw, u)
	} else if err == nil && isClusterURL(u) {
		return newClusterConn(raw, u)
	}
	o, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	return NewOwned(redis.NewClient(o)), nil
}

// ParseURL parses a node URL into go-redis options, set up for locking: no
// client-side retries of commands or dials (the algorithm retries itself,
// with fresh validity), and connections kept across late replies (the
// Client enforces the per-node timeout itself). Errors wrap ErrInvalidURL
// and never contain the password.
func ParseURL(raw string) (*redis.Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidURL, RedactURL(raw), err)
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	default:
		return nil, fmt.Errorf("%w: %s: scheme must be redis, rediss or unix", ErrInvalidURL, RedactURL(raw))
	}
	if u.Scheme != "unix" && u.Host == "" {
		return nil, fmt.Errorf("%w: %s: no host", ErrInvalidURL, RedactURL(raw))
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		msg := err.Error()
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalidURL, RedactURL(raw), msg)
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
}

// RedactURL returns raw with any password replaced by "xxxxx", in the
// userinfo and in the password and sentinel_password parameters, also when
// raw does not parse.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		q := u.Query()
		for _, k := range []string{"password", "sentinel_password"} {
			if q.Get(k) != "" {
				q.Set(k, "xxxxx")
			}
		}
		if len(q) > 0 {
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	scheme := strings.Index(raw, "://")
	at := strings.LastIndex(raw, "@")
	if scheme < 0 || at < scheme {
		return raw
	}
	userinfo := raw[scheme+3 : at]
	if colon := strings.Index(userinfo, ":"); colon >= 0 {
		userinfo = userinfo[:colon+1] + "xxxxx"
	}
	return raw[:scheme+3] + userinfo + raw[at:]
}

// checkNodes pings every node and fails on answers that show a configuration
// error (bad credentials, not a Redis server), and on two entries that reach
// the same server under different names (the same run_id); unreachable
// nodes pass.
func checkNodes(ctx context.Context, conns []redlock.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, dialCheckTimeout)
	defer cancel()
	errs := make([]error, len(conns))
	ids := make([]string, len(conns))
	done := make(chan struct{}, len(conns))
	for i, conn := range conns {
		go func() {
			defer func() { done <- struct{}{} }()
			errs[i] = checkNode(ctx, conn)
			if errs[i] == nil {
				ids[i] = runID(ctx, conn)
			}
		}()
	}
	for range conns {
		<-done
	}
	errs = append(errs, duplicates(conns, ids))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("redlock: node check failed: %w", err)
	}
	return nil
}

// checkNode pings one node, and returns what its answer shows is wrong with
// the node list, if anything.
func checkNode(ctx context.Context, conn redlock.Conn) error {
	v, err := conn.Do(ctx, "PING")
	switch {
	case err == nil && v != "PONG":
		return fmt.Errorf("%s: unexpected PING reply %v", conn.Name(), v)
	case err != nil && isConfigError(err):
		return fmt.Errorf("%s: %w", conn.Name(), err)
	case err != nil:
		return plaintextBehindTLS(conn)
	}
	return nil
}

// runID returns the run_id of the Redis process behind conn, or "" when it
// cannot be read (INFO refused, the node down).
func runID(ctx context.Context, conn redlock.Conn) string {
	v, err := conn.Do(ctx, "INFO", "server")
	info, _ := v.(string)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id
		}
	}
	return ""
}

// duplicates returns an error wrapping redlock.ErrDuplicateNode for each
// pair of entries of conns that reach the same server (by ids, their
// run_ids): two votes from one server would break the quorum's
// independence.
func duplicates(conns []redlock.Conn, ids []string) error {
	var errs []error
	first := map[string]int{}
	for i, id := range ids {
		if id == "" {
			continue
		}
		if j, seen := first[id]; seen {
			errs = append(errs, fmt.Errorf("%w: %s and %s are one server (run_id %s)", redlock.ErrDuplicateNode, conns[j].Name(), conns[i].Name(), id))
			continue
		}
		first[id] = i
	}
	return errors.Join(errs...)
}

// plaintextProbeTimeout bounds the probe of a TLS node that did not answer:
// a plaintext Redis on the same port answers a PING within a round trip.
const plaintextProbeTimeout = 500 * time.Millisecond

// plaintextBehindTLS returns an error when conn is set up for TLS (a
// rediss:// URL) and its address answers PING in plaintext: the TLS
// handshake then waits in vain, and every request would time out with no
// hint why. It returns nil otherwise, and for any other Conn.
func plaintextBehindTLS(conn redlock.Conn) error {
	c, ok := conn.(*Conn)
	if !ok {
		return nil
	}
	client, ok := c.client.(*redis.Client)
	if !ok || client.Options().TLSConfig == nil || client.Options().Network == "unix" {
		return nil
	}
	raw, err := net.DialTimeout("tcp", client.Options().Addr, plaintextProbeTimeout)
	if err != nil {
		return nil
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(plaintextProbeTimeout))
	if _, err := raw.Write([]byte("PING\r\n")); err != nil {
		return nil
	}
	reply := make([]byte, 1)
	if _, err := raw.Read(reply); err != nil || (reply[0] != '+' && reply[0] != '-') {
		return nil
	}
	return fmt.Errorf("%w: %s: the server answers in plaintext, not TLS: use redis:// for this node", ErrInvalidURL, c.Name())
}

// isConfigError reports server errors that retrying will not cure.
func isConfigError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "ERR AUTH", "ERR invalid password", "ERR DB index", "ERR invalid DB index", "ERR unknown command"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

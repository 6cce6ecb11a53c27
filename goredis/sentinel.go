package goredis

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/nodeurl"
)

// A node URL with a master_name query parameter names a Sentinel-managed
// master instead of a server: its host (and each addr parameter) is a
// Sentinel, the userinfo the Sentinels' credentials, and the master's own
// credentials go in the username and password parameters, as go-redis's
// ParseFailoverURL reads them:
//
//	redis://sentinel-a:26379/0?master_name=locks&addr=sentinel-b:26379&addr=sentinel-c:26379&password=s3cret
//
// The node follows failovers: each request goes to the master the Sentinels
// name at the time. A replica they promote is another Redis process, so the
// restart quarantine keeps it out of quorums for the recovery delay unless
// grants wait for it (redlock.Options.WaitReplicas).

// isSentinelURL reports whether u names a Sentinel-managed master.
func isSentinelURL(u *url.URL) bool { return u.Query().Has("master_name") }

// newSentinelConn returns a Conn over a go-redis failover client for a
// Sentinel URL (see isSentinelURL), set up for locking; lone as for newURL.
func newSentinelConn(raw string, u *url.URL, lone bool) (*Conn, error) {
	stripped, files, err := nodeurl.SplitTLS(raw, u)
	if err != nil {
		return nil, err
	}
	o, err := redis.ParseFailoverURL(stripped)
	if err != nil {
		return nil, nodeurl.Invalid(raw, u, err)
	}
	if err := files.Apply(raw, o.TLSConfig); err != nil {
		return nil, err
	}
	if o.MasterName == "" {
		return nil, fmt.Errorf("%w: %s: master_name is empty", ErrInvalidURL, RedactURL(raw))
	}
	setUpFailoverForLocking(o)
	o.ContextTimeoutEnabled = lone
	c := NewOwned(redis.NewFailoverClient(o))
	c.name = o.MasterName + "@sentinel:" + strings.Join(o.SentinelAddrs, ",")
	if o.TLSConfig != nil {
		c.tlsAddrs, c.tlsConf = o.SentinelAddrs, o.TLSConfig
	}
	return c, nil
}

// setUpFailoverForLocking adjusts failover options as setUpForLocking does
// a server's.
func setUpFailoverForLocking(o *redis.FailoverOptions) {
	so := &redis.Options{ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize}
	setUpForLocking(so)
	o.PoolSize = so.PoolSize
	o.MaxRetries = so.MaxRetries
	o.ContextTimeoutEnabled = so.ContextTimeoutEnabled
	o.ReadTimeout, o.WriteTimeout = so.ReadTimeout, so.WriteTimeout
	o.DisableIdentity = so.DisableIdentity
	o.DialerRetries, o.DialerRetryTimeout = so.DialerRetries, so.DialerRetryTimeout
}

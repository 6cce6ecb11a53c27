package goredis

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/internal/nodeurl"
)

// A node URL with a cluster parameter names a Redis Cluster, all of it one
// Redlock node: its host (and each addr parameter) is a seed node of the
// cluster, as go-redis's ParseClusterURL reads them:
//
//	redis://user:s3cret@10.0.0.1:6379?cluster=1&addr=10.0.0.2:6379&addr=10.0.0.3:6379
//
// Each request goes to the master that serves its key's hash slot, through
// MOVED and ASK redirections while slots move; a request that fails
// without a reply (its master died) makes the client reload its slot map,
// so that it finds the replica promoted in its place. The redlock.Client
// keeps the keys of each lock in its key's slot (see redlock.ClusterConn).
// Redlock over several clusters takes one such URL per cluster.

// isClusterURL reports whether u names a Redis Cluster.
func isClusterURL(u *url.URL) bool { return u.Query().Has("cluster") }

// newClusterConn returns a Conn over a go-redis cluster client for a
// cluster URL (see isClusterURL), set up for locking; lone as for newURL.
func newClusterConn(raw string, u *url.URL, lone bool) (*Conn, error) {
	v := *u
	q := v.Query()
	q.Del("cluster")
	v.RawQuery = q.Encode()
	stripped, files, err := nodeurl.SplitTLS(v.String(), &v)
	if err != nil {
		return nil, err
	}
	o, err := redis.ParseClusterURL(stripped)
	if err != nil {
		return nil, nodeurl.Invalid(raw, u, err)
	}
	if err := files.Apply(raw, o.TLSConfig); err != nil {
		return nil, err
	}
	setUpClusterForLocking(o)
	o.ContextTimeoutEnabled = lone
	c := NewOwned(redis.NewClusterClient(o))
	c.name = "cluster:" + strings.Join(o.Addrs, ",")
	if o.TLSConfig != nil {
		c.tlsAddrs, c.tlsConf = o.Addrs, o.TLSConfig
	}
	return c, nil
}

// setUpClusterForLocking adjusts cluster options as setUpForLocking does a
// server's; redirections (MOVED, ASK) are still followed.
func setUpClusterForLocking(o *redis.ClusterOptions) {
	so := &redis.Options{ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize}
	setUpForLocking(so)
	o.PoolSize = so.PoolSize
	o.MaxRetries = so.MaxRetries
	o.ContextTimeoutEnabled = so.ContextTimeoutEnabled
	o.ReadTimeout, o.WriteTimeout = so.ReadTimeout, so.WriteTimeout
	o.DisableIdentity = so.DisableIdentity
	o.DialerRetries, o.DialerRetryTimeout = so.DialerRetries, so.DialerRetryTimeout
}

// reloadSlotsAfter asks a cluster client to reload its slot map, in the
// background, when err is a request's failure without a reply from Redis:
// the master it went to may have died and a replica taken its slots over.
// go-redis follows MOVED and ASK by itself, but on a connection error it
// keeps sending the slot's requests to the same dead master until its
// periodic reload, a minute by default, and the slot could not be locked
// for that long after an automatic failover. go-redis coalesces reloads,
// at most one per 200 ms.
func (c *Conn) reloadSlotsAfter(err error) {
	if cc, ok := c.client.(*redis.ClusterClient); ok && err != nil && !isRedisReply(err) {
		cc.ReloadState(context.Background())
	}
}

// isRedisReply reports whether err is an error reply from Redis. It is a
// function of its own so that the target errors.As needs escapes only on
// this path, not on every request's.
func isRedisReply(err error) bool {
	var answer redis.Error
	return errors.As(err, &answer)
}

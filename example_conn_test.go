package redlock_test

import (
	"context"
	"errors"
	"fmt"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
)

// minimalConn is what an adapter over another client library (valkey-go, a
// proxy's) implements at the least: the four methods of redlock.Conn, here
// over a go-redis client. It has none of the optional capabilities, so the
// Client's waiters poll at their retry delays (it is no redlock.Listener),
// and it must return at its context's deadline (it is no
// redlock.ContextHonourer). An adapter adds a capability by adding its
// method, and asserts it as it asserts Conn here.
type minimalConn struct {
	client *goredisv9.Client
}

var _ redlock.Conn = (*minimalConn)(nil)

// Name returns the node's address, without credentials.
func (c *minimalConn) Name() string { return c.client.Options().Addr }

// Do sends one command.
func (c *minimalConn) Do(ctx context.Context, args ...string) (any, error) {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return decoded(c.client.Do(ctx, a...).Result())
}

// EvalSHA runs a script by its digest, and by its source when the node
// does not know it (NOSCRIPT).
func (c *minimalConn) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	v, err := c.client.EvalSha(ctx, sha1, keys, a...).Result()
	if goredisv9.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = c.client.Eval(ctx, source, keys, a...).Result()
	}
	return decoded(v, err)
}

// Close closes the client.
func (c *minimalConn) Close() error { return c.client.Close() }

// decoded returns a reply as a redlock.Conn does. go-redis decodes
// integers, strings and arrays (an error inside one in its place) as a
// Conn must already; a nil reply comes as its error redis.Nil.
func decoded(v any, err error) (any, error) {
	if errors.Is(err, goredisv9.Nil) {
		return nil, nil
	}
	return v, err
}

func ExampleConn() {
	ctx := context.Background()
	var conns []redlock.Conn
	for _, u := range exampleNodes {
		opts, err := goredisv9.ParseURL(u)
		if err != nil {
			fmt.Println(err)
			return
		}
		opts.ContextTimeoutEnabled = true // return at the deadline
		opts.MaxRetries = -1              // the Client retries, with fresh validity
		conns = append(conns, &minimalConn{client: goredisv9.NewClient(opts)})
	}
	client, err := redlock.New(conns, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close() // closes the Conns

	lock, err := client.Acquire(ctx, "example:minimal-conn")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("acquired over", len(conns), "nodes")
	fmt.Println("release:", lock.Release(ctx))
	// Output:
	// acquired over 3 nodes
	// release: <nil>
}

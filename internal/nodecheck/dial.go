// Package nodecheck is what the adapters' Dial functions share: building
// one Conn per node URL, and checking the node list before a Client takes
// it (see Check).
package nodecheck

import (
	"context"
	"log/slog"

	"github.com/redlock-go/redlock"
)

// Dial returns a redlock.Client over one Conn per URL, each built by
// newConn, after checking the nodes (see Check; probe may be nil). On any
// error it closes what it built. The errors of newConn and of redlock.New
// are returned as they are.
func Dial(ctx context.Context, urls []string, opts *redlock.Options, newConn func(raw string) (redlock.Conn, error), probe Probe) (*redlock.Client, error) {
	conns := make([]redlock.Conn, 0, len(urls))
	for _, raw := range urls {
		c, err := newConn(raw)
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, c)
	}
	client, err := redlock.New(conns, opts)
	if err != nil {
		closeAll(conns)
		return nil, err
	}
	var logger *slog.Logger
	if opts != nil {
		logger = opts.Logger
	}
	if err := Check(ctx, conns, logger, probe); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// closeAll closes conns.
func closeAll(conns []redlock.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

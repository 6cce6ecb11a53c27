// Package nodecheck is what the adapters' Dial functions share: building
// one Conn per node URL, and checking the node list before a Client takes
// it (see Check).
package nodecheck

import (
	"context"
	"fmt"
	"strings"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/dialreport"
	"github.com/redlock-go/redlock/internal/nodeurl"
	"github.com/redlock-go/redlock/internal/wire"
)

// Dial returns a redlock.Client over one Conn per URL, each built by
// newConn, after checking the nodes (see Check; probe may be nil). The
// nodes it could not reach are recorded on the Client
// (Client.UnreachableAtDial). On any error it closes what it built. The
// errors of newConn and of redlock.New are returned as they are; a nil ctx
// fails with redlock.ErrNilContext.
func Dial(ctx context.Context, urls []string, opts *redlock.Options, newConn func(raw string) (redlock.Conn, error), probe Probe) (*redlock.Client, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: pass context.Background() or a context that bounds the call", redlock.ErrNilContext)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redlock: dial: %w", err) // no node could be checked
	}
	if len(urls) == 1 && strings.TrimSpace(urls[0]) == "" {
		// strings.Split of an empty variable ($REDLOCK_NODES unset).
		return nil, fmt.Errorf("%w: no node URL given, only an empty string", nodeurl.ErrInvalidURL)
	}
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
	resolve, cancel := context.WithTimeout(ctx, checkTimeout)
	err = sameAddress(resolve, urls)
	cancel()
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("redlock: node check failed: %w", err)
	}
	prefix, quarantine := "", true
	if opts != nil {
		prefix, quarantine = opts.KeyPrefix, !opts.DisableQuarantine
	}
	report, err := Check(ctx, conns, probe, wire.ReleaseChannelPrefix+prefix+"redlock-dial-check", quarantine)
	if err != nil {
		client.Close()
		return nil, err
	}
	dialreport.Attach(client, report)
	return client, nil
}

// closeAll closes conns.
func closeAll(conns []redlock.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

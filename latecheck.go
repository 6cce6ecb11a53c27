package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/internal/dialreport"
	"github.com/redlock-go/redlock/internal/identity"
)

// lateCheckPause is the pause between two checks of a node that Dial could
// not reach (see holdUntilIdentified), and lateCheckBound bounds each one.
const (
	lateCheckPause = 200 * time.Millisecond
	lateCheckBound = 3 * time.Second
)

// holdUntilIdentified keeps the node of d, which Dial could not reach, out
// of every call until d.Identify finds that no other entry of the node
// list reaches its server: checked only when they all answer, two names of
// one server would count its vote twice. It checks the node every
// lateCheckPause until then, or until the Client closes. A node found to
// be another entry's server stays out for good: its calls fail with that
// error, wrapping ErrDuplicateNode, and the Logger is told at once.
func (c *Client) holdUntilIdentified(d dialreport.Down) {
	name := c.conns[d.Node].Name()
	c.nodes.Hold(d.Node, fmt.Errorf("not counted yet: it did not answer when the Client was dialed (%v), "+
		"and votes once it answers and no other entry of the node list reaches its server", d.Err))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		select {
		case <-c.closed:
		case <-ctx.Done():
		}
	}()
	go func() {
		defer cancel()
		err := identify(ctx, d.Identify)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			c.nodes.Hold(d.Node, err)
			c.opts.Logger.Error("redlock: node left out: another entry of the node list reaches its server, whose vote would count twice",
				"node", name, "error", err)
		default:
			c.nodes.Open(d.Node)
		}
	}()
}

// identify calls check every lateCheckPause until the node answers, and
// returns check's verdict, or nil once ctx ends.
func identify(ctx context.Context, check func(context.Context) error) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		bounded, cancel := context.WithTimeout(ctx, lateCheckBound)
		err := check(bounded)
		cancel()
		if !errors.Is(err, dialreport.ErrNoAnswer) {
			return err
		}
		t.Reset(lateCheckPause)
	}
}

// warnUnidentified tells Options.Logger that the server of node, by its
// name, could not be identified.
func (c *Client) warnUnidentified(node string) {
	c.opts.Logger.Warn("redlock: node's server not identified (it refused INFO: an ACL without it, or credentials refused): listed again under another name, it would vote twice",
		"node", node)
}

// identifyNode reads the identities of node's server (see identity.Of)
// before its first request, for a Client from New: it returns the error
// of a read the node did not answer, and, final, an error wrapping
// ErrDuplicateNode when an entry identified before it reaches the same
// server. Such a node is held out for good (see New), and the Logger is
// told once. A node whose server cannot be identified (its INFO refused)
// votes, and the Logger is warned once.
func (c *Client) identifyNode(ctx context.Context, node int) (err error, final bool) {
	ids, err := identity.Of(ctx, c.conns[node])
	if err != nil {
		return err, false
	}
	name := c.conns[node].Name()
	if len(ids) == 0 {
		c.warnUnidentified(name)
		return nil, false
	}
	j, id, dup := c.servers.Admit(node, ids)
	if !dup {
		return nil, false
	}
	err = fmt.Errorf("%w: %s and %s reach one server (%s); %s, identified first, counts", ErrDuplicateNode, c.conns[j].Name(), name, id, c.conns[j].Name())
	c.nodes.Hold(node, err)
	c.opts.Logger.Error("redlock: node left out: another entry of the node list reaches its server, whose vote would count twice",
		"node", name, "error", err)
	return err, true
}

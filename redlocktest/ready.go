package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// markAll marks every node of a new cluster ready to vote, as
// redlock.Client.MarkReady(ctx, true) would (see wire.MarkerKey and
// wire.ProcessKey): independent nodes one by one; a Redis Cluster's
// masters for each slot they serve. Replicas receive their master's
// markers by replication.
func (c *Cluster) markAll(ctx context.Context) error {
	if c.masters == 0 {
		errs := make([]error, len(c.nodes))
		for i, n := range c.nodes {
			errs[i] = n.markReady(ctx, [][]string{{wire.MarkerKey, wire.ProcessKey}})
			var se ServerError
			if errors.As(errs[i], &se) && strings.HasPrefix(string(se), "READONLY ") {
				errs[i] = nil // a replica (a replicaof line): its master's marker reaches it
			}
		}
		return errors.Join(errs...)
	}
	errs := make([]error, c.masters)
	for i, n := range c.nodes[:c.masters] {
		var sets [][]string
		for _, r := range n.slots {
			for slot := r.First; slot <= r.Last; slot++ {
				marker, process := wire.SlotMarkerKeys(slot)
				sets = append(sets, []string{marker, process})
			}
		}
		errs[i] = n.markReady(ctx, sets)
	}
	return errors.Join(errs...)
}

// markReady marks the node ready to vote for each pair of restart marker
// and process key in sets, as the library's mark-ready script does: the
// marker "0", and beside it the run_id of the node's process (INFO server;
// "" where INFO is refused, as the script records it). One MSET per pair,
// whose two keys share a hash slot, pipelined over one connection.
func (n *Node) markReady(ctx context.Context, sets [][]string) error {
	info, err := n.Do(ctx, "INFO", "server")
	var se ServerError
	if err != nil && !errors.As(err, &se) {
		return fmt.Errorf("redlocktest: mark node %d ready: %w", n.index, err)
	}
	runID := infoField(info, "run_id")
	cmds := make([][]string, len(sets))
	for i, keys := range sets {
		cmds[i] = []string{"MSET", keys[0], "0", keys[1], runID}
	}
	if err := pipeline(ctx, n.Addr(), n.conf.password, cmds); err != nil {
		return fmt.Errorf("redlocktest: mark node %d ready: %w", n.index, err)
	}
	return nil
}

// pipelineTimeout bounds pipeline when ctx has no earlier deadline.
const pipelineTimeout = 30 * time.Second

// pipeline sends cmds over one new connection (after AUTH when password is
// set), writing them all before reading their replies, and returns the
// first error reply or I/O error.
func pipeline(ctx context.Context, addr, password string, cmds [][]string) error {
	ctx, cancel := context.WithTimeout(ctx, pipelineTimeout)
	defer cancel()
	conn, r, err := dial(ctx, addr, password)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	written := make(chan error, 1)
	go func() {
		var buf []byte
		for _, args := range cmds {
			buf = append(buf, encodeCommand(args)...)
		}
		_, err := conn.Write(buf)
		written <- err
	}()
	var first error
	for i := range cmds {
		if _, err := readReply(r); err != nil && first == nil {
			first = fmt.Errorf("command %d of %d: %w", i+1, len(cmds), err)
			var se ServerError
			if !errors.As(err, &se) {
				break // the connection is broken: no more replies
			}
		}
	}
	if first != nil {
		conn.SetDeadline(time.Unix(1, 0)) // unblock a write the server no longer reads
	}
	if err := <-written; err != nil && first == nil {
		first = err
	}
	if first != nil {
		return commandError(ctx, addr, "pipeline", first)
	}
	return nil
}

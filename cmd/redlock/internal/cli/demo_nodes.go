package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redlock-go/redlock/redlocktest"
)

// demoNodes are the nodes the demo runs on, and the faults it injects.
type demoNodes interface {
	// URLs returns the nodes' URLs, in order.
	URLs() []string
	// Kill stops node i at once; it forgets everything.
	Kill(i int) error
	// Restart starts node i again on the same address, empty.
	Restart(ctx context.Context, i int) error
	// Kind names the nodes for the demo's introduction.
	Kind() string
	Close()
}

// restartRetry bounds how long an embedded node retries binding its old
// port when it is brought back.
const restartRetry = 2 * time.Second

// embeddedNodes are miniredis servers in this process, on loopback ports.
// Keys expire by the wall clock, as on a real server.
type embeddedNodes struct {
	addrs []string
	nodes []*miniredis.Miniredis
}

func startEmbedded(n int) (*embeddedNodes, error) {
	e := &embeddedNodes{}
	for range n {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			e.Close()
			return nil, fmt.Errorf("starting an embedded node: %w", err)
		}
		e.nodes = append(e.nodes, m)
		e.addrs = append(e.addrs, m.Addr())
	}
	return e, nil
}

func (e *embeddedNodes) URLs() []string {
	urls := make([]string, len(e.addrs))
	for i, a := range e.addrs {
		urls[i] = "redis://" + a
	}
	return urls
}

func (e *embeddedNodes) Kind() string { return "embedded in this process (miniredis)" }

func (e *embeddedNodes) Kill(i int) error {
	e.nodes[i].Close()
	return nil
}

func (e *embeddedNodes) Restart(ctx context.Context, i int) error {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	deadline := time.Now().Add(restartRetry)
	for {
		err := m.StartAddr(e.addrs[i])
		if err == nil {
			e.nodes[i] = m
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("restarting node %d on %s: %w", i+1, e.addrs[i], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *embeddedNodes) Close() {
	for _, m := range e.nodes {
		m.Close()
	}
}

// realNodes are redis-server processes started from PATH, without
// persistence, so that a restarted node comes back empty.
type realNodes struct{ c *redlocktest.Cluster }

func startReal(ctx context.Context, n int) (*realNodes, error) {
	c, err := redlocktest.New(ctx, redlocktest.Options{Nodes: n})
	if err != nil {
		return nil, err
	}
	return &realNodes{c: c}, nil
}

func (r *realNodes) URLs() []string { return r.c.URLs() }
func (r *realNodes) Kind() string   { return "redis-server processes, without persistence" }
func (r *realNodes) Kill(i int) error {
	return r.c.Node(i).Kill()
}
func (r *realNodes) Restart(ctx context.Context, i int) error { return r.c.Node(i).Start(ctx) }
func (r *realNodes) Close()                                   { r.c.Close() }

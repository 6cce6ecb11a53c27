package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// Toxic names used by Link; one of each at most.
const (
	toxicHoldUp     = "hold_upstream"
	toxicHoldDown   = "hold_downstream"
	toxicLatencyUp  = "latency_upstream"
	toxicLatencyDwn = "latency_downstream"
)

// Link is the network path from one worker to one node: a toxiproxy proxy.
// Its methods are safe for concurrent use and idempotent.
type Link struct {
	worker, node int
	proxy        *toxiproxy.Proxy
	addr         string

	mu      sync.Mutex
	cut     bool
	held    Direction // the directions blackholed
	latency time.Duration
}

// Direction names which way data is dropped on a Link.
type Direction int

const (
	// Requests is the way from the worker to the node.
	Requests Direction = 1 << iota
	// Replies is the way from the node to the worker.
	Replies
	// Both is either way.
	Both = Requests | Replies
)

// String returns "requests", "replies" or "both ways".
func (d Direction) String() string {
	switch d {
	case Requests:
		return "requests"
	case Replies:
		return "replies"
	case Both:
		return "both ways"
	}
	return "nothing"
}

// holdToxics maps each direction to its toxic's name and toxiproxy stream.
var holdToxics = []struct {
	dir          Direction
	name, stream string
}{
	{Requests, toxicHoldUp, "upstream"},
	{Replies, toxicHoldDown, "downstream"},
}

// Worker returns the worker's index.
func (l *Link) Worker() int { return l.worker }

// Node returns the node's index.
func (l *Link) Node() int { return l.node }

// Addr returns the proxy's listening address.
func (l *Link) Addr() string { return l.addr }

// Cut drops the link: open connections are closed and new ones refused,
// so requests fail at once, like a partition that the client notices.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = true
	l.proxy.Stop()
}

// Hold blackholes the link: connections stay open but data in either
// direction is discarded, so requests time out, like a partition that the
// client cannot tell from a slow node.
func (l *Link) Hold() error { return l.Drop(Both) }

// Drop blackholes the link in the directions dir, in addition to any
// already dropped: connections stay open and data going that way is
// discarded. Dropping only Replies lets requests reach the node and take
// effect while the worker never hears of them.
func (l *Link) Drop(dir Direction) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range holdToxics {
		if dir&t.dir == 0 || l.held&t.dir != 0 {
			continue
		}
		if err := l.addToxic(t.name, "timeout", t.stream, `{"timeout":0}`); err != nil {
			return err
		}
		l.held |= t.dir
	}
	return nil
}

// SetLatency delays data in both directions by d, plus or minus jitter;
// d = 0 removes the delay.
func (l *Link) SetLatency(d, jitter time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.latency != 0 {
		for _, name := range []string{toxicLatencyUp, toxicLatencyDwn} {
			if err := l.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
				return fmt.Errorf("cluster: %s: remove %s: %w", l, name, err)
			}
		}
		l.latency = 0
	}
	if d == 0 {
		return nil
	}
	attrs := fmt.Sprintf(`{"latency":%d,"jitter":%d}`, d.Milliseconds(), jitter.Milliseconds())
	for name, stream := range map[string]string{toxicLatencyUp: "upstream", toxicLatencyDwn: "downstream"} {
		if err := l.addToxic(name, "latency", stream, attrs); err != nil {
			return err
		}
	}
	l.latency = d
	return nil
}

// Heal undoes Cut, Hold and Drop (not SetLatency).
func (l *Link) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range holdToxics {
		if l.held&t.dir == 0 {
			continue
		}
		if err := l.proxy.Toxics.RemoveToxic(context.Background(), t.name); err != nil {
			return fmt.Errorf("cluster: %s: remove %s: %w", l, t.name, err)
		}
		l.held &^= t.dir
	}
	if l.cut {
		if err := l.proxy.Start(); err != nil {
			return fmt.Errorf("cluster: %s: restart proxy on %s: %w", l, l.addr, err)
		}
		l.cut = false
	}
	return nil
}

// redirect points the link at the node process listening on addr, as a
// failover that keeps the node's name does: open connections are closed,
// and new ones reach addr. A cut link stays cut.
func (l *Link) redirect(addr string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.proxy.Update(&toxiproxy.Proxy{Listen: l.addr, Upstream: addr, Enabled: !l.cut}); err != nil {
		return fmt.Errorf("cluster: %s: redirect to %s: %w", l, addr, err)
	}
	return nil
}

// String returns "worker-<w>/n<n>".
func (l *Link) String() string { return fmt.Sprintf("worker-%d/n%d", l.worker, l.node) }

func (l *Link) addToxic(name, typ, stream, attrs string) error {
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("cluster: %s: add %s: %w", l, name, err)
	}
	return nil
}

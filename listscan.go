package redlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redlock-go/redlock/internal/hashslot"
	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wire"
)

// listScanCount is the COUNT of each step of List's SCAN of a node: how
// many keys the node looks at, and reads a few bytes of, in one script
// call. Larger takes fewer round trips; smaller keeps each step, during
// which the node serves nobody else, shorter: 200 keys take well under a
// millisecond.
const listScanCount = "200"

// MaxListed bounds how many lock keys List reads the state of: a listing
// that finds more stops there and says so (ErrListIncomplete). Pass a
// longer prefix to see the others.
const MaxListed = 10000

// scanTarget is where one SCAN of a node goes: the node itself, or over a
// Redis Cluster one of its masters, reached by a key of a slot it serves.
type scanTarget struct {
	node int
	keys []string // nil, or the key that routes to a cluster's master
	name string   // the node's name, and the master's address
}

// scanTargets returns where List's SCAN of every node goes: each node, and
// each master of a node that is a Redis Cluster.
func (c *Client) scanTargets(ctx context.Context) ([]scanTarget, []error) {
	var targets []scanTarget
	var errs []error
	for i, conn := range c.conns {
		if !isRedisCluster(conn) {
			targets = append(targets, scanTarget{node: i, name: conn.Name()})
			continue
		}
		masters, err := clusterMasters(ctx, conn, c.operatorTimeout())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: the cluster's masters: %w", conn.Name(), err))
			continue
		}
		for _, m := range masters {
			key := "{" + hashslot.Tag(m.slot) + "}"
			targets = append(targets, scanTarget{node: i, keys: []string{key}, name: conn.Name() + " master " + m.addr})
		}
	}
	return targets, errs
}

// scanLocks returns the lock keys beginning with prefix (the key on the
// wire) that some node holds, each once, sorted, scanning every target at
// once; and the error of each target that could not be scanned to its end,
// or ErrListIncomplete's reason when there are more than MaxListed.
func (c *Client) scanLocks(ctx context.Context, prefix string) ([]string, []error) {
	targets, errs := c.scanTargets(ctx)
	var mu sync.Mutex
	seen := map[string]bool{}
	full := false
	forEach(len(targets), func(i int) {
		err := c.scanTarget(ctx, targets[i], wire.ScanPattern(prefix), func(keys []string) bool {
			mu.Lock()
			defer mu.Unlock()
			for _, k := range keys {
				if !wire.Reserved(k) {
					seen[k] = true
				}
			}
			full = full || len(seen) > MaxListed
			return !full
		})
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", targets[i].name, err))
			mu.Unlock()
		}
	})
	keys := slices.Sorted(maps.Keys(seen))
	if full {
		keys = keys[:MaxListed]
		errs = append(errs, fmt.Errorf("more than %d locks begin with %s: pass a longer prefix", MaxListed, quoteKey(prefix)))
	}
	return keys, errs
}

// scanTarget runs SCAN over t to its end, a step at a time, handing each
// step's lock keys to found, which returns false to stop.
func (c *Client) scanTarget(ctx context.Context, t scanTarget, pattern string, found func([]string) bool) error {
	if err := c.nodes.Held(t.node); err != nil {
		return err // out of every call: it did not answer at Dial, say
	}
	conn := c.conns[t.node]
	cursor := "0"
	for {
		stepCtx, cancel := context.WithTimeout(ctx, c.operatorTimeout())
		v, err := nodes.Within(stepCtx, conn, func(ctx context.Context) (any, error) {
			return c.nodes.Call(ctx, t.node, wire.ListScanScript, t.keys, []string{cursor, pattern, listScanCount})
		})
		cancel()
		if err != nil {
			return err
		}
		next, keys, err := parseScanStep(v)
		if err != nil {
			return err
		}
		if !found(keys) || next == "0" {
			return nil
		}
		cursor = next
	}
}

// parseScanStep decodes the list scan script's reply: {cursor, {key...}}.
func parseScanStep(v any) (cursor string, keys []string, err error) {
	a, ok := v.([]any)
	if ok && len(a) == 2 {
		cursor, ok = a[0].(string)
		if ok {
			keys, ok = stringsOf(a[1])
		}
	}
	if !ok {
		return "", nil, fmt.Errorf("redlock: unexpected reply to the list scan script: %v", v)
	}
	return cursor, keys, nil
}

// clusterMaster is a master of a Redis Cluster and a slot it serves.
type clusterMaster struct {
	addr string
	slot int
}

// errClusterSlots is the error of a CLUSTER SLOTS reply of another shape.
var errClusterSlots = errors.New("unexpected reply to CLUSTER SLOTS")

// clusterMasters returns each master of the Redis Cluster that conn
// reaches, with the first slot it serves, from CLUSTER SLOTS.
func clusterMasters(ctx context.Context, conn Conn, timeout time.Duration) ([]clusterMaster, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := nodes.Within(ctx, conn, func(ctx context.Context) (any, error) { return conn.Do(ctx, "CLUSTER", "SLOTS") })
	if err != nil {
		return nil, err
	}
	ranges, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %v", errClusterSlots, v)
	}
	var masters []clusterMaster
	seen := map[string]bool{}
	for _, r := range ranges {
		m, err := slotRangeMaster(r)
		if err != nil {
			return nil, err
		}
		if !seen[m.addr] {
			seen[m.addr] = true
			masters = append(masters, m)
		}
	}
	return masters, nil
}

// slotRangeMaster decodes one range of a CLUSTER SLOTS reply: {first
// slot, last slot, {host, port, ...}, replicas...}.
func slotRangeMaster(r any) (clusterMaster, error) {
	a, ok := r.([]any)
	if !ok || len(a) < 3 {
		return clusterMaster{}, fmt.Errorf("%w: %v", errClusterSlots, r)
	}
	first, ok1 := a[0].(int64)
	node, ok2 := a[2].([]any)
	if !ok1 || !ok2 || len(node) < 2 {
		return clusterMaster{}, fmt.Errorf("%w: %v", errClusterSlots, r)
	}
	host, ok1 := node[0].(string)
	port, ok2 := node[1].(int64)
	if !ok1 || !ok2 {
		return clusterMaster{}, fmt.Errorf("%w: %v", errClusterSlots, r)
	}
	return clusterMaster{addr: net.JoinHostPort(host, strconv.FormatInt(port, 10)), slot: int(first)}, nil
}

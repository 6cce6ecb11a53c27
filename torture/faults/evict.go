package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"
	"github.com/redlock-go/redlock/goredis"
)

// evictKeys is how many distinct filler keys Evict cycles through: far
// more than fit under the memory limit, so that every write adds memory.
const evictKeys = 1024

// Evict caps every node's memory a little above what it uses, sets the
// volatile-ttl eviction policy and keeps writing filler keys with a long
// TTL. Each write pushes memory over the cap and Redis evicts the keys
// closest to expiry first, which are the lock keys.
type Evict struct {
	// Settle is how long to wait before measuring the memory in use, so
	// that the workers' connections, which take memory too, are open.
	Settle time.Duration
	// Headroom is how many bytes the cap leaves above the memory in use.
	Headroom int64
	// ValueSize is the size of each filler value.
	ValueSize int
	// Every is the pause between rounds of filler writes (one per node).
	Every time.Duration
}

// Name describes the fault.
func (f Evict) Name() string {
	return fmt.Sprintf("maxmemory +%d KiB, volatile-ttl, filler writes every %v", f.Headroom>>10, f.Every)
}

// Run implements Fault.
func (f Evict) Run(ctx context.Context, env *Env, rng *rand.Rand) error {
	n := env.Cluster.Nodes()
	clients := make([]*goredisv9.Client, n)
	for v, u := range env.Cluster.DirectURLs() {
		o, err := goredis.ParseURL(u)
		if err != nil {
			return err
		}
		clients[v] = goredisv9.NewClient(o)
		defer clients[v].Close()
	}
	if !sleep(ctx, f.Settle) {
		return nil
	}
	setCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for v, c := range clients {
		info, err := c.Info(setCtx, "memory").Result()
		if err != nil {
			return fmt.Errorf("faults: evict: node %d: %w", v, err)
		}
		used, err := infoInt(info, "used_memory")
		if err != nil {
			return fmt.Errorf("faults: evict: node %d: %w", v, err)
		}
		for _, kv := range [][2]string{
			{"maxmemory-policy", "volatile-ttl"},
			{"maxmemory-samples", "64"},
			{"maxmemory", strconv.FormatInt(used+f.Headroom, 10)},
		} {
			if err := c.ConfigSet(setCtx, kv[0], kv[1]).Err(); err != nil {
				return fmt.Errorf("faults: evict: node %d: CONFIG SET %s: %w", v, kv[0], err)
			}
		}
	}
	id := env.start("evict", "all nodes", f.Name())
	value := strings.Repeat("x", f.ValueSize)
	for sleep(ctx, f.Every) {
		for _, c := range clients {
			key := "filler:" + strconv.Itoa(rng.IntN(evictKeys))
			// Errors are expected while other faults are at work; the
			// filler only has to keep memory under pressure.
			_ = c.Set(ctx, key, value, time.Hour).Err()
		}
	}
	var evicted []string
	var errs []error
	endCtx, cancelEnd := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelEnd()
	for v, c := range clients {
		if info, err := c.Info(endCtx, "stats").Result(); err == nil {
			if k, err := infoInt(info, "evicted_keys"); err == nil {
				evicted = append(evicted, fmt.Sprintf("n%d:%d", v, k))
			}
		}
		errs = append(errs, c.ConfigSet(endCtx, "maxmemory", "0").Err())
	}
	env.endDetail(id, "evict", "all nodes", "evicted keys "+strings.Join(evicted, " "))
	return errors.Join(errs...)
}

// infoInt returns the integer field name of an INFO reply.
func infoInt(info, name string) (int64, error) {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in INFO", name)
}

// Command scriptcost measures what each guarantee of a lock costs a Redis
// server, with the client held constant: one connection sends the requests
// of each kind of cycle (acquire, then release, a new key each time), one
// after another, and the server's CPU per cycle is read from /proc. The
// kinds are this library's functions as its clients call them, the same
// functions with wake-ups and then the restart quarantine left out, the
// fenced floor (bsm/redislock's scripts plus a per-key fencing counter),
// bsm/redislock's own scripts, and a plain SET NX PX and DEL.
//
//	go run ./cmd/scriptcost -cycles 20000 -rounds 5
//
// Each round runs every kind in turn on the same server; the table gives
// the median over the rounds, and the commands the server ran per cycle
// (INFO commandstats).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/nodes"
	"github.com/redlock-go/redlock/internal/wire"
)

// kind is one kind of cycle: how it acquires and releases key.
type kind struct {
	name    string
	acquire func(ctx context.Context, c *redis.Client, key, token string) error
	release func(ctx context.Context, c *redis.Client, key, token string) error
}

// Lock settings as the bench gives every library: TTL 10 s, the default
// recovery delay of 30 s (the counter outlives the lock by it).
const (
	ttlMillis     = "10000"
	delayMicros   = "30000000"
	counterMillis = "40000"
	clientID      = "scriptcostclient"
)

var (
	bsmObtain = redis.NewScript(`
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`)
	bsmRelease   = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	floorAcquire = redis.NewScript(drivers.FloorAcquireSource)
)

// now is the caller's clock in microseconds, as the library sends it.
func now() string { return strconv.FormatInt(time.Now().UnixMicro(), 10) }

// fcall calls function fn of the library with keys and args.
func fcall(ctx context.Context, c *redis.Client, fn string, keys []string, args ...string) error {
	a := []any{"FCALL", fn, len(keys)}
	for _, k := range keys {
		a = append(a, k)
	}
	for _, v := range args {
		a = append(a, v)
	}
	return c.Do(ctx, a...).Err()
}

// ours is this library's acquire and release functions: queued (Acquire)
// with wake-ups, or plain (TryAcquire) with a release announced to nobody;
// delay is the recovery delay in microseconds, "0" without the quarantine.
func ours(name string, queued bool, delay string) kind {
	lasts := strconv.FormatInt(wire.QueueLasts.Microseconds(), 10)
	return kind{
		name: name,
		acquire: func(ctx context.Context, c *redis.Client, key, token string) error {
			keys := []string{key, wire.FencePrefix + key, wire.MarkerKey, wire.ProcessKey}
			clock := now()
			if !queued {
				return fcall(ctx, c, wire.AcquireScript.Function, keys, token, ttlMillis, delay, counterMillis, clock)
			}
			keys = append(keys, wire.QueuePrefix+key, wire.QueueDeadlinePrefix+key, wire.WaitingPrefix+key)
			return fcall(ctx, c, wire.QueuedAcquireScript.Function, keys, token, ttlMillis, delay, counterMillis, clock, clientID, clock, lasts, "1")
		},
		release: func(ctx context.Context, c *redis.Client, key, token string) error {
			if !queued {
				return fcall(ctx, c, wire.ReleaseScript.Function, []string{key}, token, "")
			}
			keys := []string{key, wire.QueuePrefix + key, wire.QueueDeadlinePrefix + key, wire.WaitingPrefix + key}
			return fcall(ctx, c, wire.ReleaseScript.Function, keys, token, wire.ReleaseChannelPrefix, now(), clientID, "")
		},
	}
}

// kinds are the kinds of cycle measured, from every guarantee on to none.
func kinds() []kind {
	return []kind{
		ours("this library: every guarantee (Acquire, Release)", true, delayMicros),
		ours("this library: no queue, no wake-ups (TryAcquire; a release nobody is told of)", false, delayMicros),
		ours("this library: fencing only (also no restart quarantine)", false, "0"),
		{
			name: "fenced floor: bsm/redislock's scripts plus the fencing counter",
			acquire: func(ctx context.Context, c *redis.Client, key, token string) error {
				return floorAcquire.Run(ctx, c, []string{key, "fence:" + key}, token, ttlMillis, now(), counterMillis).Err()
			},
			release: func(ctx context.Context, c *redis.Client, key, token string) error {
				return bsmRelease.Run(ctx, c, []string{key}, token).Err()
			},
		},
		{
			name: "bsm/redislock's scripts",
			acquire: func(ctx context.Context, c *redis.Client, key, token string) error {
				return bsmObtain.Run(ctx, c, []string{key}, token, "0", ttlMillis).Err()
			},
			release: func(ctx context.Context, c *redis.Client, key, token string) error {
				return bsmRelease.Run(ctx, c, []string{key}, token).Err()
			},
		},
		{
			name: "plain SET NX PX, DEL",
			acquire: func(ctx context.Context, c *redis.Client, key, token string) error {
				return c.SetNX(ctx, key, token, 10*time.Second).Err()
			},
			release: func(ctx context.Context, c *redis.Client, key, _ string) error {
				return c.Del(ctx, key).Err()
			},
		},
	}
}

// result is one kind's measurements over one round.
type result struct {
	cpu      time.Duration // server CPU per cycle
	scripts  time.Duration // of which running scripts and functions
	commands map[string]float64
}

func main() {
	cycles := flag.Int("cycles", 20000, "cycles per kind and round")
	rounds := flag.Int("rounds", 5, "rounds, each running every kind in turn")
	server := flag.String("redis-server", "redis-server", "redis-server binary")
	flag.Parse()
	if err := run(context.Background(), *server, *cycles, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "scriptcost:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, server string, cycles, rounds int) error {
	set, err := nodes.Start(ctx, server, 1)
	if err != nil {
		return err
	}
	defer set.Close()
	c := redis.NewClient(&redis.Options{Addr: set.Addrs()[0]})
	defer c.Close()
	if err := prepare(ctx, c); err != nil {
		return err
	}
	ks := kinds()
	results := make([][]result, len(ks))
	for r := range rounds {
		for i, k := range ks {
			res, err := measure(ctx, set, c, k, fmt.Sprintf("r%d:k%d:", r, i), cycles)
			if err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			results[i] = append(results[i], res)
		}
	}
	fmt.Printf("%d cycles per kind in each of %d rounds, one connection, a new key per cycle; medians over the rounds.\n\n", cycles, rounds)
	fmt.Println("| kind of cycle | Redis CPU per cycle | in scripts or functions | commands per cycle |")
	fmt.Println("|---|---:|---:|---|")
	for i, k := range ks {
		cpu, scripts := medians(results[i])
		fmt.Printf("| %s | %s | %s | %s |\n", k.name, micros(cpu), micros(scripts), commands(results[i][len(results[i])-1].commands))
	}
	return nil
}

// prepare loads the function library and marks the node ready, as a
// deployment that has served locks for a while is.
func prepare(ctx context.Context, c *redis.Client) error {
	if err := c.Do(ctx, "FUNCTION", "LOAD", "REPLACE", wire.Library).Err(); err != nil {
		return fmt.Errorf("load the function library: %w", err)
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	_, after, _ := strings.Cut(info, "run_id:")
	runID, _, _ := strings.Cut(after, "\r\n")
	return c.MSet(ctx, wire.MarkerKey, "0", wire.ProcessKey, runID).Err()
}

// measure runs cycles cycles of k on new keys starting with prefix.
func measure(ctx context.Context, set *nodes.Set, c *redis.Client, k kind, prefix string, cycles int) (result, error) {
	// Warm up: the scripts cached, the connection busy.
	for i := range 200 {
		if err := cycle(ctx, c, k, prefix+"warm:"+strconv.Itoa(i)); err != nil {
			return result{}, err
		}
	}
	before, cpu := set.Commands(ctx), set.CPU()
	for i := range cycles {
		if err := cycle(ctx, c, k, prefix+strconv.Itoa(i)); err != nil {
			return result{}, err
		}
	}
	cpu = set.CPU() - cpu
	after := set.Commands(ctx)
	per := map[string]float64{}
	var scripts time.Duration
	for name, n := range after {
		d := n - before[name]
		switch {
		case d <= 0 || name == "info":
		case name == nodes.UsecPrefix+"fcall" || name == nodes.UsecPrefix+"evalsha":
			scripts += time.Duration(d) * time.Microsecond
		case !strings.HasPrefix(name, nodes.UsecPrefix):
			per[name] = float64(d) / float64(cycles)
		}
	}
	return result{cpu: cpu / time.Duration(cycles), scripts: scripts / time.Duration(cycles), commands: per}, nil
}

// cycle acquires key by k, then releases it.
func cycle(ctx context.Context, c *redis.Client, k kind, key string) error {
	token := "tok" + key
	if err := k.acquire(ctx, c, key, token); err != nil && err != redis.Nil {
		return err
	}
	return k.release(ctx, c, key, token)
}

// medians are the median server CPU per cycle of rs, and the median time
// in scripts and functions.
func medians(rs []result) (cpu, scripts time.Duration) {
	cpus := make([]time.Duration, 0, len(rs))
	inScripts := make([]time.Duration, 0, len(rs))
	for _, r := range rs {
		cpus = append(cpus, r.cpu)
		inScripts = append(inScripts, r.scripts)
	}
	return nodes.Median(cpus), nodes.Median(inScripts)
}

// micros formats d in microseconds.
func micros(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000)
}

// commands formats a count per command, the most frequent first.
func commands(per map[string]float64) string {
	names := make([]string, 0, len(per))
	for n := range per {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if per[names[i]] != per[names[j]] {
			return per[names[i]] > per[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%.2f %s", per[n], strings.ToUpper(n)))
	}
	return strings.Join(slices.Clip(parts), ", ")
}

// Command scriptcost measures what each guarantee of a lock costs a Redis
// server, with the client held constant: one connection sends the requests
// of each kind of cycle (acquire, then release, a new key each time), one
// after another, and the server's CPU per cycle is read from /proc. The
// kinds are this library's functions as its clients call them, the same
// functions with wake-ups and then the restart quarantine left out, the
// commands that every guarantee needs sent with no other work (a bound
// from below: see bareLibrary), the fenced floor (bsm/redislock's scripts
// plus a per-key fencing counter), bsm/redislock's own scripts, redsync's
// commands (a plain SET NX PX, and the same release script), and a plain
// SET NX PX and DEL. The client's own CPU per cycle (getrusage) is given
// too: the same go-redis connection sends every kind, so it shows what
// the requests themselves cost a client, apart from any library's work.
//
//	go run ./cmd/scriptcost -cycles 20000 -rounds 5
//
// With -nodes N it starts N servers and sends each request to all of them
// at once, a goroutine per node, as a Redlock client of N nodes does, and
// waits for every reply; with -lan-delay D (the bench's LAN cases use
// 250µs) every node sits behind a proxy that delays each way by D.
//
// Each round runs every kind in turn on the same server; the table gives
// the median over the rounds, and the commands the server ran per cycle
// (INFO commandstats).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/bench/internal/delayproxy"
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

// bareLibrary runs the commands that every guarantee needs in the common
// case, and nothing else: an acquisition reads the restart marker, its
// writer, the fencing counter and the waiting mark in one MGET, sets the
// key, reads the node's clock (a new counter starts from it) and sets the
// counter; a release reads the key and the waiting mark, and deletes the
// key. No judgement of the marker, no error handling, the fewest keys and
// arguments: no implementation of these guarantees can send the server
// less, so its cost bounds from below what this library's functions can
// reach.
const bareLibrary = `#!lua name=scriptcost_bare
redis.register_function('bare_acquire', function(KEYS, ARGV)
	local read = redis.call("MGET", KEYS[3], KEYS[4], KEYS[2], KEYS[5])
	if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return {0, "0", 0} end
	local now = redis.call("TIME")
	redis.call("SET", KEYS[2], ARGV[3], "PX", ARGV[4])
	return {1, ARGV[3], 0}
end)
redis.register_function('bare_release', function(KEYS, ARGV)
	local read = redis.call("MGET", KEYS[1], KEYS[2])
	if read[1] == ARGV[1] then return redis.call("DEL", KEYS[1]) end
	return 0
end)
`

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

// The kinds that the others are compared with.
const (
	bsmName     = "bsm/redislock's scripts"
	redsyncName = "redsync's commands: SET NX PX, then bsm/redislock's release script"
)

// kinds are the kinds of cycle measured, from every guarantee on to none.
func kinds() []kind {
	return []kind{
		ours("this library: every guarantee (Acquire, Release)", true, delayMicros),
		ours("this library: no queue, no wake-ups (TryAcquire; a release nobody is told of)", false, delayMicros),
		ours("this library: fencing only (also no restart quarantine)", false, "0"),
		{
			name: "every guarantee's commands alone (a bound from below: see bareLibrary)",
			acquire: func(ctx context.Context, c *redis.Client, key, token string) error {
				keys := []string{key, wire.FencePrefix + key, wire.MarkerKey, wire.ProcessKey, wire.WaitingPrefix + key}
				return fcall(ctx, c, "bare_acquire", keys, token, ttlMillis, now(), counterMillis)
			},
			release: func(ctx context.Context, c *redis.Client, key, token string) error {
				return fcall(ctx, c, "bare_release", []string{key, wire.WaitingPrefix + key}, token)
			},
		},
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
			name: bsmName,
			acquire: func(ctx context.Context, c *redis.Client, key, token string) error {
				return bsmObtain.Run(ctx, c, []string{key}, token, "0", ttlMillis).Err()
			},
			release: func(ctx context.Context, c *redis.Client, key, token string) error {
				return bsmRelease.Run(ctx, c, []string{key}, token).Err()
			},
		},
		{
			name: redsyncName,
			acquire: func(ctx context.Context, c *redis.Client, key, token string) error {
				return c.SetNX(ctx, key, token, 10*time.Second).Err()
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
	client   time.Duration // the client's CPU per cycle
	commands map[string]float64
}

func main() {
	delayproxy.RunIfChild() // the -lan-delay proxy runs as a copy of this binary
	cycles := flag.Int("cycles", 20000, "cycles per kind and round")
	rounds := flag.Int("rounds", 5, "rounds, each running every kind in turn")
	server := flag.String("redis-server", "redis-server", "redis-server binary")
	count := flag.Int("nodes", 1, "redis-server nodes; each request goes to all of them at once, a goroutine per node")
	delay := flag.Duration("lan-delay", 0, "`delay` added each way in front of every node, as over a network (0: loopback)")
	flag.Parse()
	if *count < 1 || *delay < 0 {
		fmt.Fprintln(os.Stderr, "scriptcost: -nodes must be at least 1, -lan-delay not negative")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout, *server, *count, *delay, *cycles, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "scriptcost:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, server string, count int, delay time.Duration, cycles, rounds int) error {
	set, err := nodes.Start(ctx, server, count)
	if err != nil {
		return err
	}
	defer set.Close()
	addrs := set.Addrs()
	if delay > 0 {
		p, _, err := delayproxy.StartCalibrated(ctx, delayproxy.Spec{Upstreams: addrs, Delay: delay, BothWays: true})
		if err != nil {
			return err
		}
		defer p.Close()
		addrs = p.Addrs()
	}
	var c fanout
	for _, addr := range addrs {
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		c = append(c, node)
	}
	if err := c.each(func(node *redis.Client) error { return load(ctx, node) }); err != nil {
		return err
	}
	ks := kinds()
	results := make([][]result, len(ks))
	for r := range rounds {
		for j := range ks {
			// Every other round runs the kinds in reverse, so that no kind
			// always comes first or last.
			i := j
			if r%2 == 1 {
				i = len(ks) - 1 - j
			}
			res, err := measure(ctx, set, c, ks[i], fmt.Sprintf("r%d:k%d:", r, i), cycles)
			if err != nil {
				return fmt.Errorf("%s: %w", ks[i].name, err)
			}
			results[i] = append(results[i], res)
		}
	}
	fmt.Fprintf(w, "%d cycles per kind in each of %d rounds, %d node(s) %s, one connection to each, a new key per cycle; medians over the rounds.\n\n", cycles, rounds, count, reach(delay))
	fmt.Fprintln(w, "| kind of cycle | Redis CPU per cycle | in scripts or functions | client CPU per cycle | commands per cycle |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	for i, k := range ks {
		cpu, scripts, client := medians(results[i])
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", k.name, micros(cpu), micros(scripts), micros(client), commands(results[i][len(results[i])-1].commands))
	}
	printRatios(w, ks, results)
	return nil
}

// printRatios prints each kind's CPU per cycle over the reference kinds'
// in the same round, as the median and the range over the rounds: the
// machine's speed drifts between rounds more than between the kinds of
// one round.
func printRatios(w io.Writer, ks []kind, results [][]result) {
	bsm, redsync := reference(ks, bsmName), reference(ks, redsyncName)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Ratios within each round: median (lowest–highest) over the rounds.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| kind of cycle | Redis CPU vs bsm/redislock | Redis CPU vs redsync's commands | client CPU vs bsm/redislock |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	server := func(r result) time.Duration { return r.cpu }
	client := func(r result) time.Duration { return r.client }
	for i, k := range ks {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", k.name, ratios(results[i], results[bsm], server),
			ratios(results[i], results[redsync], server), ratios(results[i], results[bsm], client))
	}
}

// reference returns the index of the kind named name.
func reference(ks []kind, name string) int {
	return slices.IndexFunc(ks, func(k kind) bool { return k.name == name })
}

// ratios formats the median, lowest and highest over the rounds of of(rs)
// over of(refs).
func ratios(rs, refs []result, of func(result) time.Duration) string {
	q := make([]float64, 0, len(rs))
	for r := range rs {
		if d := of(refs[r]); d > 0 {
			q = append(q, float64(of(rs[r]))/float64(d))
		}
	}
	if len(q) == 0 {
		return "not measured"
	}
	slices.Sort(q)
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", q[len(q)/2], q[0], q[len(q)-1])
}

// load loads the function libraries.
func load(ctx context.Context, c *redis.Client) error {
	for _, lib := range []string{wire.Library, bareLibrary} {
		if err := c.Do(ctx, "FUNCTION", "LOAD", "REPLACE", lib).Err(); err != nil {
			return fmt.Errorf("load a function library: %w", err)
		}
	}
	return nil
}

// prepare empties the node and marks it ready, as a deployment that has
// served locks for a while is. Every kind starts so: the keys an earlier
// kind left to expire (fencing counters outlive their locks by the
// recovery delay) would otherwise expire while a later kind is measured,
// and the server's work of expiring them would count for it.
func prepare(ctx context.Context, c *redis.Client) error {
	if err := c.FlushAll(ctx).Err(); err != nil {
		return err
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
func measure(ctx context.Context, set *nodes.Set, c fanout, k kind, prefix string, cycles int) (result, error) {
	if err := c.each(func(node *redis.Client) error { return prepare(ctx, node) }); err != nil {
		return result{}, err
	}
	// Warm up: the scripts cached, the connection busy.
	for i := range 200 {
		if err := cycle(ctx, c, k, prefix+"warm:"+strconv.Itoa(i)); err != nil {
			return result{}, err
		}
	}
	before, cpu, client := set.Commands(ctx), set.CPU(), ownCPU()
	for i := range cycles {
		if err := cycle(ctx, c, k, prefix+strconv.Itoa(i)); err != nil {
			return result{}, err
		}
	}
	cpu, client = set.CPU()-cpu, ownCPU()-client
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
	n := time.Duration(cycles)
	return result{cpu: cpu / n, scripts: scripts / n, client: client / n, commands: per}, nil
}

// ownCPU is the CPU time this process has used: the client's.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cycle acquires key by k on every node, then releases it on every node.
func cycle(ctx context.Context, c fanout, k kind, key string) error {
	token := "tok" + key
	err := c.each(func(node *redis.Client) error {
		if err := k.acquire(ctx, node, key, token); err != nil && err != redis.Nil {
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.each(func(node *redis.Client) error { return k.release(ctx, node, key, token) })
}

// reach says how the client reaches the nodes.
func reach(delay time.Duration) string {
	if delay > 0 {
		return "behind a delay of " + delay.String() + " each way"
	}
	return "on loopback"
}

// fanout is one client per node.
type fanout []*redis.Client

// each runs do on every node, at once when they are several, and returns
// the first error.
func (f fanout) each(do func(*redis.Client) error) error {
	if len(f) == 1 {
		return do(f[0])
	}
	errs := make(chan error, len(f))
	for _, node := range f {
		go func() { errs <- do(node) }()
	}
	var first error
	for range f {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// medians are the median server CPU per cycle of rs, the median time in
// scripts and functions, and the median client CPU per cycle.
func medians(rs []result) (cpu, scripts, client time.Duration) {
	cpus := make([]time.Duration, 0, len(rs))
	inScripts := make([]time.Duration, 0, len(rs))
	clients := make([]time.Duration, 0, len(rs))
	for _, r := range rs {
		cpus = append(cpus, r.cpu)
		inScripts = append(inScripts, r.scripts)
		clients = append(clients, r.client)
	}
	return nodes.Median(cpus), nodes.Median(inScripts), nodes.Median(clients)
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

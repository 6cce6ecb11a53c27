// Command residue measures what distinct lock names leave behind on the
// nodes: it starts new redis-server processes, takes and releases many
// distinct names through goredis.Dial with the default options (a failed
// attempt on some of them too), and prints the keys and used_memory of the
// nodes before, right after the last release, and at intervals until both
// are back at their starting level or the wait ends.
//
//	go run ./cmd/residue -names 1000000 -nodes 3
//
// The fencing counters expire the TTL plus the recovery delay after a
// name's last grant (40 s with the defaults); waiting clients' queues
// sooner. Every figure is the sum over the nodes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// workers is how many goroutines take and release names: enough to keep
// the nodes busy on two cores, few enough for go-redis's default pools.
const workers = 32

// acquireTimeout bounds one acquisition. Names are never contended, so a
// name that cannot be taken in this long means the nodes are in trouble.
const acquireTimeout = 5 * time.Second

// memorySlack is how far above its starting level used_memory may end and
// still count as back: the allocator keeps some freed pages, and the
// server's hash tables shrink only in steps.
const memorySlack = 1 << 20

// config is what the flags select.
type config struct {
	names, nodes, failEvery int
	every, wait             time.Duration
}

// sample is the nodes' total keys, used_memory and mem_clients_normal
// (the connections' buffers, part of used_memory) at one moment.
type sample struct {
	keys, memory, clients int64
}

func main() {
	cfg := config{}
	flag.IntVar(&cfg.names, "names", 100000, "distinct lock names to take and release")
	flag.IntVar(&cfg.nodes, "nodes", 3, "independent redis-server nodes")
	flag.IntVar(&cfg.failEvery, "fail-every", 10, "every N-th name also gets a failed attempt while held (0: none)")
	flag.DurationVar(&cfg.every, "every", 10*time.Second, "interval between samples after the last release")
	flag.DurationVar(&cfg.wait, "wait", 2*time.Minute, "longest wait after the last release")
	flag.Parse()
	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "residue:", err)
		os.Exit(1)
	}
}

// run starts the nodes, takes the names, and prints the samples.
func run(ctx context.Context, cfg config) error {
	if cfg.names < 1 || cfg.nodes < 1 || cfg.every <= 0 {
		return errors.New("-names, -nodes and -every must be positive")
	}
	cluster, err := redlocktest.New(ctx, redlocktest.Options{Nodes: cfg.nodes, Unmarked: true})
	if err != nil {
		return err
	}
	defer cluster.Close()
	client, err := goredis.Dial(ctx, cluster.URLs(), nil)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := client.MarkReady(ctx, false); err != nil {
		return err
	}
	if err := warmUp(ctx, client); err != nil {
		return err
	}
	before, err := measure(ctx, cluster)
	if err != nil {
		return err
	}
	fmt.Printf("%d names, %d nodes, %d goroutines, a failed attempt every %d names, default options\n",
		cfg.names, cfg.nodes, workers, cfg.failEvery)
	fmt.Println("| when | keys | used_memory | of which connection buffers |")
	fmt.Println("|---|---:|---:|---:|")
	printRow("before the run", before)
	start := time.Now()
	failed := lockNames(ctx, client, cfg)
	if failed > int64(cfg.names)/100 {
		return fmt.Errorf("%d names of %d had a call fail", failed, cfg.names)
	}
	err = watch(ctx, cluster, cfg, before, time.Since(start))
	fmt.Printf("%d names had a call fail\n", failed)
	return err
}

// warmUp takes and releases a name on each of workers goroutines at once,
// before the baseline: that loads the scripts, whose cache stays in
// used_memory, and opens the connections the run uses, whose buffers count
// there too (mem_clients_normal).
func warmUp(ctx context.Context, client *redlock.Client) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() { errs <- lockName(ctx, client, -1-i, false) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// lockNames takes and releases cfg.names distinct names on workers
// goroutines, with a failed attempt on every cfg.failEvery-th name while it
// is held, and returns how many names had a call fail (each printed on
// stderr): a node too slow for the node timeout once in a while does not
// end the measurement, as what such a name leaves expires all the same.
func lockNames(ctx context.Context, client *redlock.Client, cfg config) int64 {
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < cfg.names; i = int(next.Add(1)) - 1 {
				if err := lockName(ctx, client, i, cfg.failEvery > 0 && i%cfg.failEvery == 0); err != nil {
					failed.Add(1)
					fmt.Fprintln(os.Stderr, "residue:", err)
				}
			}
		})
	}
	wg.Wait()
	return failed.Load()
}

// lockName takes and releases the i-th name, and tries it once more while
// it is held when fail is set: that attempt must fail.
func lockName(ctx context.Context, client *redlock.Client, i int, fail bool) error {
	name := "order:" + strconv.Itoa(i)
	actx, cancel := context.WithTimeout(ctx, acquireTimeout)
	defer cancel()
	lock, err := client.Acquire(actx, name)
	if err != nil {
		return fmt.Errorf("acquire %s: %w", name, err)
	}
	if fail {
		if other, err := client.TryAcquire(ctx, name); err == nil {
			other.Release(ctx)
			return fmt.Errorf("%s granted twice", name)
		}
	}
	return lock.Release(ctx)
}

// watch prints a sample right after the last release and then every
// cfg.every, until keys and memory are back at the level of before (the
// memory within memorySlack) or cfg.wait has passed.
func watch(ctx context.Context, cluster *redlocktest.Cluster, cfg config, before sample, took time.Duration) error {
	released := time.Now()
	for {
		s, err := measure(ctx, cluster)
		if err != nil {
			return err
		}
		since := time.Since(released)
		if since < time.Second {
			printRow(fmt.Sprintf("right after the last release (run took %s)", took.Round(time.Second)), s)
		} else {
			printRow(fmt.Sprintf("%s later", since.Round(time.Second)), s)
		}
		if s.keys <= before.keys && s.memory <= before.memory+memorySlack {
			return nil
		}
		if since >= cfg.wait {
			return fmt.Errorf("still %d keys and %s after %s", s.keys, mb(s.memory), cfg.wait)
		}
		time.Sleep(cfg.every)
	}
}

// measure sums DBSIZE and used_memory over the nodes of cluster.
func measure(ctx context.Context, cluster *redlocktest.Cluster) (sample, error) {
	var s sample
	for _, n := range cluster.Nodes() {
		keys, err := n.Do(ctx, "DBSIZE")
		if err != nil {
			return s, err
		}
		info, err := n.Do(ctx, "INFO", "memory")
		if err != nil {
			return s, err
		}
		k, err := strconv.ParseInt(keys, 10, 64)
		if err != nil {
			return s, fmt.Errorf("DBSIZE of %s: %w", n.Addr(), err)
		}
		m, err := infoField(info, "used_memory")
		if err != nil {
			return s, fmt.Errorf("INFO memory of %s: %w", n.Addr(), err)
		}
		c, err := infoField(info, "mem_clients_normal")
		if err != nil {
			return s, fmt.Errorf("INFO memory of %s: %w", n.Addr(), err)
		}
		s.keys += k
		s.memory += m
		s.clients += c
	}
	return s, nil
}

// infoField reads the integer field of an INFO reply.
func infoField(info, field string) (int64, error) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("no " + field + " line")
}

// printRow prints one sample as a Markdown table row.
func printRow(when string, s sample) {
	fmt.Printf("| %s | %d | %s | %s |\n", when, s.keys, mb(s.memory), mb(s.clients))
}

// mb formats a byte count in megabytes.
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

// Command permitturns measures where one client's semaphore spends its
// time: the goroutines of a Client waiting for a semaphore's permits take
// turns, one attempt in flight at a time, so that a client's sixteen
// goroutines on four permits (the bench's semaphore-1) are compared with
// one goroutine alone on the same semaphore, and with the sixteen spread
// over four Clients, and with the sixteen of one client each on a permit
// of its own (a mutex per permit, four goroutines on each): that shape has
// four acquisitions in flight at once, and shows what the client's
// one-at-a-time turns cost, at the same cost per grant. Each cycle
// takes a permit, holds it for a spin of 20 µs (the bench's crowd hold)
// and releases it. The server's CPU per grant comes from /proc, the
// client's from getrusage.
//
//	go run ./cmd/permitturns -rounds 3
//
// Each round runs every shape in turn on one fresh redis-server; the table
// gives each shape's median over the rounds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/bench/internal/nodes"
	"github.com/redlock-go/redlock/goredis"
)

// shape is how many goroutines take permits, over how many Clients; split
// gives each goroutine one permit's key of its own, taken as a mutex.
type shape struct {
	name                string
	goroutines, clients int
	split               bool
}

var shapes = []shape{
	{"1 goroutine, 1 client", 1, 1, false},
	{"16 goroutines, 1 client", 16, 1, false},
	{"16 goroutines, 4 clients", 16, 4, false},
	{"16 goroutines, 1 client, a permit's mutex each (4 on each)", 16, 1, true},
}

// The semaphore and the hold, as in the bench's semaphore-1.
const (
	limit = 4
	hold  = 20 * time.Microsecond
)

// result is one shape's run.
type result struct {
	rate             float64 // grants per second
	serverPerGrantUS float64
	clientPerGrantUS float64
}

func main() {
	rounds := flag.Int("rounds", 3, "rounds, each running every shape in turn")
	d := flag.Duration("duration", 4*time.Second, "how long each shape runs per round")
	server := flag.String("redis-server", "redis-server", "redis-server binary")
	flag.Parse()
	if err := run(context.Background(), *server, *rounds, *d); err != nil {
		fmt.Fprintln(os.Stderr, "permitturns:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, server string, rounds int, d time.Duration) error {
	set, err := nodes.Start(ctx, server, 1)
	if err != nil {
		return err
	}
	defer set.Close()
	results := make([][]result, len(shapes))
	for r := range rounds {
		for j := range shapes {
			i := j
			if r%2 == 1 {
				i = len(shapes) - 1 - j
			}
			res, err := measure(ctx, set, shapes[i], fmt.Sprintf("r%d:s%d", r, i), d)
			if err != nil {
				return fmt.Errorf("%s: %w", shapes[i].name, err)
			}
			results[i] = append(results[i], res)
		}
	}
	fmt.Printf("| shape | grants/s | server CPU per grant | client CPU per grant |\n|---|---:|---:|---:|\n")
	for i, s := range shapes {
		m := median(results[i])
		fmt.Printf("| %s | %.0f | %.1f µs | %.1f µs |\n", s.name, m.rate, m.serverPerGrantUS, m.clientPerGrantUS)
	}
	return nil
}

// measure runs shape s on the semaphore named name for d.
func measure(ctx context.Context, set *nodes.Set, s shape, name string, d time.Duration) (result, error) {
	var clients []*redlock.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range s.clients {
		conn := goredis.NewOwned(goredisv9.NewClient(&goredisv9.Options{Addr: set.Addrs()[0]}))
		c, err := redlock.New([]redlock.Conn{conn}, nil)
		if err != nil {
			return result{}, err
		}
		clients = append(clients, c)
		if err := c.MarkReady(ctx, false); err != nil {
			return result{}, err
		}
	}
	serverBefore, clientBefore := set.CPU(), selfCPU()
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var grants atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for g := range s.goroutines {
		c := clients[g%len(clients)]
		key, opts := name, []redlock.LockOption{redlock.WithLimit(limit)}
		if s.split {
			key, opts = fmt.Sprintf("%s:permit:%d", name, g%limit+1), nil
		}
		wg.Go(func() {
			for runCtx.Err() == nil {
				l, err := c.Acquire(runCtx, key, opts...)
				if err != nil {
					if runCtx.Err() == nil {
						failed.Store(err)
					}
					return
				}
				for t := time.Now(); time.Since(t) < hold; {
				}
				grants.Add(1)
				if err := l.Release(ctx); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, ok := failed.Load().(error); ok {
		return result{}, err
	}
	n := float64(grants.Load())
	server, client := set.CPU()-serverBefore, selfCPU()-clientBefore
	return result{rate: n / elapsed.Seconds(), serverPerGrantUS: float64(server.Microseconds()) / n,
		clientPerGrantUS: float64(client.Microseconds()) / n}, nil
}

// selfCPU returns this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median returns the result of median rate among rs.
func median(rs []result) result {
	sorted := append([]result(nil), rs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].rate < sorted[j].rate })
	return sorted[len(sorted)/2]
}

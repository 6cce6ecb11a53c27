package redlock_test

import (
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// heapMB returns the live heap after a collection, in MiB.
func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// A node that stops answering (SIGSTOP) under steady traffic costs the
// client bounded memory, the other nodes keep granting, and Close returns
// within its bound. Before the per-node queue had a bound and lagging
// requests stopped chaining, the heap grew by up to 10 MiB a second and
// Close blocked for minutes.
func TestSilentNode_boundedMemoryAndClose(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{})
		opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 50 * time.Millisecond}
		c, err := redlock.New(a.conns(t, cluster.Addrs()), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.MarkReady(bg, false); err != nil {
			t.Fatal(err)
		}
		loadScripts(t, cluster)

		stop := make(chan struct{})
		grants := make(chan int, 1)
		go func() {
			n := 0
			defer func() { grants <- n }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if l, err := c.TryAcquire(bg, "silent"); err == nil {
					l.Release(bg)
					n++
				}
			}
		}()
		time.Sleep(200 * time.Millisecond)
		before := heapMB()
		if err := cluster.Node(0).Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cluster.Node(0).Resume() })
		// The node's queue fills to its bound and empties again at each
		// read timeout of its stuck connections (a second): the heap saws
		// up and down by up to about 17 MiB, by how fast the others grant.
		// So the heap is sampled, and its low point over the last 3 s, which
		// spans such timeouts, is what must not grow: requests that pile up
		// raise it by 10 MiB a second.
		trough := math.Inf(1)
		for start := time.Now(); time.Since(start) < 6*time.Second; time.Sleep(200 * time.Millisecond) {
			grown := heapMB() - before
			if time.Since(start) < 3*time.Second {
				continue
			}
			trough = min(trough, grown)
		}
		close(stop)
		n := <-grants
		t.Logf("%d grants; the heap's low point over the last 3 of 6 s with a silent node: %.1f MiB above the start", n, trough)
		if trough > 12 {
			t.Errorf("the heap stayed %.1f MiB or more above the start from 3 to 6 s with one silent node: requests to it pile up", trough)
		}
		if n == 0 {
			t.Error("no lock granted by the four nodes that answer")
		}

		closed := make(chan error, 1)
		start := time.Now()
		go func() { closed <- c.Close() }()
		select {
		case <-closed:
			t.Logf("Close took %v", time.Since(start))
		case <-time.After(2 * time.Second):
			t.Fatalf("Close still blocked after 2 s with a silent node; its bound is three times the %v node timeout", opts.NodeTimeout)
		}
	})
}

// Close with a node silent before any request returns too.
func TestSilentNode_closeAfterSilentRelease(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{})
	c := newClient(t, cluster, adapters[0], &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 50 * time.Millisecond})
	l, err := c.Acquire(bg, "silent-release")
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Node(1).Pause(); err != nil {
		t.Fatal(err)
	}
	defer cluster.Node(1).Resume()
	if err := l.Release(bg); err != nil {
		t.Fatalf("release with one silent node of five: %v", err)
	}
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close still blocked after 2 s")
	}
}

// A lone node that stops answering fails an attempt within the per-node
// timeout as it stands and the clean-up release after it, over both
// adapters as given to New and as Dial builds them: the Client asks a lone
// node from the caller's goroutine only when its Conn gives up at the
// deadline. Over a go-redis client that does not (ContextTimeoutEnabled
// off, as ParseURL sets it), such an attempt took the client's socket
// timeouts, 2 s. Each timeout of a lone node raises the timeout (see
// TestNodeTimeout_risesOverOneSlowNode), here up to twice NodeTimeout.
func TestSilentNode_loneNodeFailsWithinTheNodeTimeout(t *testing.T) {
	const nodeTimeout = 50 * time.Millisecond
	opts := &redlock.Options{NodeTimeout: nodeTimeout, MaxNodeTimeout: 2 * nodeTimeout}
	clients := map[string]func(t *testing.T, cluster *redlocktest.Cluster) *redlock.Client{}
	for _, a := range adapters {
		clients[a.name+"/New"] = func(t *testing.T, cluster *redlocktest.Cluster) *redlock.Client {
			return newClient(t, cluster, a, opts)
		}
	}
	for _, d := range dialers {
		clients[d.name+"/Dial"] = func(t *testing.T, cluster *redlocktest.Cluster) *redlock.Client {
			c, err := d.dial(bg, cluster.URLs(), opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
	}
	for name, newLoneClient := range clients {
		t.Run(name, func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
			c := newLoneClient(t, cluster)
			if err := c.MarkReady(bg, false); err != nil {
				t.Fatal(err)
			}
			lock, err := c.TryAcquire(bg, "before")
			if err != nil {
				t.Fatal(err)
			}
			lock.Release(bg)
			if err := cluster.Node(0).Pause(); err != nil {
				t.Fatal(err)
			}
			defer cluster.Node(0).Resume()
			for _, key := range []string{"a", "b"} {
				start := time.Now()
				_, err := c.TryAcquire(bg, key)
				if took := time.Since(start); !errors.Is(err, redlock.ErrNotAcquired) || took > 10*nodeTimeout {
					t.Errorf("TryAcquire(%q) on a paused lone node: %v after %v, want ErrNotAcquired within about two per-node timeouts (at most %v each)", key, err, took, opts.MaxNodeTimeout)
				}
			}
		})
	}
}

// A node slower than the per-node timeout, on a client of several nodes,
// keeps its connection: its requests wait for their replies while the
// other nodes make the quorum. Over rueidis, and over a go-redis client
// with ContextTimeoutEnabled on, a request given up at its deadline closed
// its connection, and each request to the slow node dialled a new one.
func TestSilentNode_slowNodeKeepsItsConnection(t *testing.T) {
	variants := append([]adapter{}, adapters...)
	variants = append(variants, adapter{"goredis-context-timeouts", func(t testing.TB, addrs []string) []redlock.Conn {
		conns := make([]redlock.Conn, len(addrs))
		for i, addr := range addrs {
			o, err := goredis.ParseURL("redis://" + addr)
			if err != nil {
				t.Fatal(err)
			}
			o.ContextTimeoutEnabled = true
			conns[i] = goredis.NewOwned(goredisv9.NewClient(o))
		}
		return conns
	}})
	for _, a := range variants {
		t.Run(a.name, func(t *testing.T) {
			cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
			c := newClient(t, cluster, a, &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 50 * time.Millisecond})
			slow := cluster.Node(0)
			cycle := func(key string) {
				l := take(t, c, key)
				if err := l.Release(bg); err != nil {
					t.Fatalf("release %s: %v", key, err)
				}
			}
			cycle("warm-up") // every connection open
			before := connectionsReceived(t, slow)

			if err := slow.Pause(); err != nil {
				t.Fatal(err)
			}
			paused := time.Now()
			cycles := 0
			for ; time.Since(paused) < 300*time.Millisecond; cycles++ {
				cycle("slow-" + strconv.Itoa(cycles))
			}
			if err := slow.Resume(); err != nil {
				t.Fatal(err)
			}
			// Wait until the node answers the client again: it has then
			// seen every connection dialled meanwhile. A request that
			// waited past its deadline behind the node's backlog is not
			// sent, so new locks are taken until one reaches it.
			after, probes := 0, 0
			eventually(t, "the slow node holds a lock taken after it answered again", func() bool {
				after++
				key := "after-" + strconv.Itoa(after)
				if _, err := c.TryAcquire(bg, key); err != nil {
					t.Fatalf("acquire %s: %v", key, err)
				}
				for start := time.Now(); time.Since(start) < 200*time.Millisecond; time.Sleep(5 * time.Millisecond) {
					probes++
					if keyOn(t, slow, key) != "" {
						return true
					}
				}
				return false
			})

			// Each of the test's own reads of the node is a connection.
			dialled := connectionsReceived(t, slow) - before - probes - 1
			t.Logf("%d cycles with the node silent for 300 ms: %d connections dialled to it", cycles, dialled)
			// A pool (go-redis) may open one more connection for the
			// second of the two requests a node has in flight at most.
			if dialled > 1 {
				t.Errorf("the client dialled %d new connections to a node slower than the node timeout over %d cycles; want at most 1", dialled, cycles)
			}
		})
	}
}

// connectionsReceived returns the connections node accepted since it
// started, its own probe included.
func connectionsReceived(t testing.TB, node *redlocktest.Node) int {
	t.Helper()
	info, err := node.Do(bg, "INFO", "stats")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_connections_received")
	return 0
}

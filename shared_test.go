package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Readers hold a key together, and no writer while they do; a writer holds
// it alone; Inspect shows the readers.
func TestShared_readersTogetherWriterAlone(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, fast())
		r1, err := client.TryAcquire(bg, "table", redlock.WithShared())
		if err != nil {
			t.Fatal(err)
		}
		r2, err := client.TryAcquire(bg, "table", redlock.WithShared())
		if err != nil {
			t.Fatalf("a second reader: %v", err)
		}
		if r2.Fence() <= r1.Fence() {
			t.Errorf("reader fencing tokens %d then %d", r1.Fence(), r2.Fence())
		}
		eventually(t, "both readers on every node", func() bool { return readersOnAll(t, client, "table", r1, r2) })
		if _, err := client.TryAcquire(bg, "table"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("a writer while readers hold: %v, want ErrNotAcquired", err)
		}
		for _, r := range []*redlock.Lock{r1, r2} {
			if err := r.Release(bg); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range cluster.Nodes() {
			eventually(t, "the readers' key gone", func() bool { return do(t, n, "EXISTS", "table") == "0" })
		}
		w, err := client.TryAcquire(bg, "table")
		if err != nil {
			t.Fatalf("a writer once the readers left: %v", err)
		}
		if w.Fence() <= r2.Fence() {
			t.Errorf("writer's fencing token %d not above the readers' %d", w.Fence(), r2.Fence())
		}
		waitForKey(t, cluster, "table", w.Token())
		if _, err := client.TryAcquire(bg, "table", redlock.WithShared()); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("a reader while a writer holds: %v, want ErrNotAcquired", err)
		}
		if err := w.Release(bg); err != nil {
			t.Fatal(err)
		}
	})
}

// readersOnAll reports whether every node lists exactly the readers given.
func readersOnAll(t *testing.T, client *redlock.Client, key string, readers ...*redlock.Lock) bool {
	t.Helper()
	states, err := client.Inspect(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range readers {
		want = append(want, r.Token())
	}
	slices.Sort(want)
	for _, s := range states {
		got := slices.Sorted(slices.Values(s.Readers))
		if s.Err != nil || s.Holder != "" || !slices.Equal(got, want) {
			return false
		}
	}
	return true
}

// rwLog records the holdings of a read-write lock by readers and writers.
type rwLog struct {
	mu                      sync.Mutex
	reads, writes           []holding
	readersNow, mostReaders int
}

// begin notes a holder starting to hold.
func (l *rwLog) begin(write bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !write {
		l.readersNow++
		l.mostReaders = max(l.mostReaders, l.readersNow)
	}
}

// end records a holding that ended.
func (l *rwLog) end(write bool, h holding) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if write {
		l.writes = append(l.writes, h)
		return
	}
	l.readersNow--
	l.reads = append(l.reads, h)
}

// holdInTurns takes the read-write lock "rw" as a writer or a reader until
// ctx ends, holding it 3 ms each time, and records each holding in log.
func holdInTurns(ctx context.Context, t *testing.T, client *redlock.Client, write bool, log *rwLog) {
	var opts []redlock.LockOption
	if !write {
		opts = append(opts, redlock.WithShared())
	}
	for ctx.Err() == nil {
		lock, err := client.Acquire(ctx, "rw", opts...)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("write %v: %v", write, err)
			}
			return
		}
		log.begin(write)
		start := time.Now()
		time.Sleep(3 * time.Millisecond)
		log.end(write, holding{key: "rw", fence: lock.Fence(), start: start, end: time.Now()})
		if err := lock.Release(bg); err != nil {
			t.Errorf("release: %v", err)
		}
		if write {
			// A pause between writes, in which the readers' turns come.
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Under readers and writers of several clients, a writer's holding never
// overlaps another holding, readers do hold together, and writers get in.
func TestShared_writerNeverOverlaps(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	var clients []*redlock.Client
	for i := range 3 {
		clients = append(clients, newClient(t, cluster, adapters[i%2], fast()))
	}
	var log rwLog
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() { holdInTurns(ctx, t, clients[i%3], false, &log) })
	}
	for i := range 2 {
		wg.Go(func() { holdInTurns(ctx, t, clients[i], true, &log) })
	}
	wg.Wait()
	reads, writes := log.reads, log.writes
	t.Logf("%d reads (at most %d at once), %d writes", len(reads), log.mostReaders, len(writes))
	checkHoldings(t, writes) // writers exclude each other, tokens in order
	for _, w := range writes {
		for _, r := range reads {
			if r.start.Before(w.end) && w.start.Before(r.end) {
				t.Fatalf("a writer (token %d) and a reader (token %d) held at once", w.fence, r.fence)
			}
		}
	}
	if log.mostReaders < 2 || len(reads) < 20 {
		t.Errorf("%d reads, at most %d at once: readers do not share the key", len(reads), log.mostReaders)
	}
	if len(writes) < 5 {
		t.Errorf("writers got in %d times in 3 s", len(writes))
	}
}

// A writer waiting in Acquire gets the key while readers keep coming, each
// overlapping the next, which would hold it forever if readers could enter
// while a writer waits.
func TestShared_writerNotStarved(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		readers := newClient(t, cluster, a, fast())
		writer := newClient(t, cluster, a, fast())
		ctx, cancel := context.WithCancel(bg)
		defer cancel()
		var wg sync.WaitGroup
		defer wg.Wait()
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					lock, err := readers.Acquire(ctx, "hot", redlock.WithShared())
					if err != nil {
						return
					}
					time.Sleep(40 * time.Millisecond)
					lock.Release(bg)
				}
			})
		}
		time.Sleep(200 * time.Millisecond) // the readers hold it, in turns
		wctx, wcancel := context.WithTimeout(bg, 5*time.Second)
		defer wcancel()
		w, err := writer.Acquire(wctx, "hot")
		if err != nil {
			t.Fatalf("the writer starved: %v", err)
		}
		readersLeave(t, writer, w)
		w.Release(bg)
		cancel()
	})
}

// A reader waiting in Acquire gets the key while writers of other clients
// take it back to back, each waiting again right after its release: the
// writers that came after the reader defer to it, so that it waits only
// for the writers ahead of it when it came. Each reader's wait is counted
// in grants to writers: at most writerBound, a few rounds of the writers
// (one per writer would do with queues that always agree); a starved
// reader waits out its ten seconds through thousands.
func TestShared_readerNotStarvedByWriters(t *testing.T) {
	const writers, writerBound = 4, 12
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var writes atomic.Int64
	for i := range writers {
		writer := newClient(t, cluster, adapters[i%len(adapters)], fast())
		wg.Go(func() {
			for ctx.Err() == nil {
				lock, err := writer.Acquire(ctx, "hot")
				if err != nil {
					return
				}
				writes.Add(1)
				time.Sleep(2 * time.Millisecond) // the writer's work
				lock.Release(bg)
			}
		})
	}
	eventually(t, "the writers taking the key in turns", func() bool { return writes.Load() >= 40 })
	for i, a := range []adapter{adapters[0], adapters[1], adapters[0]} {
		reader := newClient(t, cluster, a, fast())
		rctx, rcancel := context.WithTimeout(bg, 10*time.Second)
		before := writes.Load()
		r, err := reader.Acquire(rctx, "hot", redlock.WithShared())
		rcancel()
		during := writes.Load() - before
		t.Logf("reader %d (%s) waited through %d writes", i, a.name, during)
		if err != nil {
			t.Fatalf("reader %d starved through %d writes: %v", i, during, err)
		}
		if during > writerBound {
			t.Errorf("reader %d waited through %d writes, want at most %d", i, during, writerBound)
		}
		if err := r.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
}

// A writer's later attempts defer to a reader first in line that began
// waiting before it: where the key frees without a release (its holder's
// TTL ran out, so nobody is woken), a writer retrying every few
// milliseconds finds it free long before the reader's next try, nearly a
// second later, and still leaves it to the reader.
func TestShared_laterWriterDefersToAnEarlierReader(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], patientNodes(fast()))
	readers := newClient(t, cluster, adapters[1], patientNodes(fast()))
	writers := newClient(t, cluster, adapters[0], patientNodes(fast()))
	// Held until both wait in line: a busy host may take seconds to queue
	// them on every node, and a key that expired before would go to the
	// reader at once.
	holdOnEveryNode(t, cluster, holder, "doc", 20*time.Second)
	var order grantOrder = make(chan string, 2)
	order.acquire(readers, "reader", redlock.WithShared(), redlock.WithRetry(redlock.Jittered(800*time.Millisecond, 900*time.Millisecond)))
	eventually(t, "the reader queued on every node", queuedInOrder(t, cluster, "doc", readers.ID()+"+r"))
	order.acquire(writers, "writer", redlock.WithRetry(redlock.Jittered(2*time.Millisecond, 5*time.Millisecond)))
	eventually(t, "the writer queued behind it on every node", queuedInOrder(t, cluster, "doc", readers.ID()+"+r", writers.ID()))
	// The holder's TTL runs out, without a release that would wake anyone.
	for _, n := range cluster.Nodes() {
		do(t, n, "PEXPIRE", "doc", "100")
	}
	order.want(t, "reader", "writer")
}

// A reader keeps its own place in line, whatever the other readers of its
// Client do: one that came after a writer does not move the place of one
// that came before it behind that writer. Before, a Client's readers had
// one place, which its latest refused reader dated.
func TestShared_readersOfOneClientKeepTheirOwnPlaces(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	readers := newClient(t, cluster, adapters[1], patientNodes(fast()))
	writers := newClient(t, cluster, adapters[0], patientNodes(fast()))
	held := holdOnEveryNode(t, cluster, holder, "doc", 20*time.Second)
	wakeOnly := redlock.WithRetry(redlock.Jittered(time.Minute, time.Minute))
	var order grantOrder = make(chan string, 3)
	order.acquire(readers, "first reader", redlock.WithShared(), wakeOnly)
	eventually(t, "the first reader queued", queuedInOrder(t, cluster, "doc", readers.ID()+"+r"))
	order.acquire(writers, "writer", wakeOnly)
	eventually(t, "the writer queued", queuedInOrder(t, cluster, "doc", readers.ID()+"+r", writers.ID()))
	order.acquire(readers, "second reader", redlock.WithShared(), wakeOnly)
	eventually(t, "the second reader queued", queuedInOrder(t, cluster, "doc", readers.ID()+"+r", writers.ID(), readers.ID()+"+r"))
	listeningOnEveryNode(t, cluster, readers, "doc", 2)
	listeningOnEveryNode(t, cluster, writers, "doc", 1)
	if err := held.Release(bg); err != nil {
		t.Fatal(err)
	}
	order.want(t, "first reader", "writer", "second reader")
}

// A release that names a writer first wakes no other writer: with a
// reader second in line, its announcement went to the key's channel too,
// and woke every writer waiting, which raced the first in line and took
// the key ahead of it and of the reader. The first writer here hears no
// announcement (its Conns cannot listen) and retries every 50 ms; the
// others try only when woken.
func TestShared_releaseNamingAWriterFirstWakesNoLaterWriter(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	first, err := redlock.New(deafConns(goredisConns(t, cluster.Addrs())), patientNodes(fast()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })
	readers := newClient(t, cluster, adapters[1], patientNodes(fast()))
	later := newClient(t, cluster, adapters[0], patientNodes(fast()))
	held := holdOnEveryNode(t, cluster, holder, "doc", 20*time.Second)
	wakeOnly := redlock.WithRetry(redlock.Jittered(time.Minute, time.Minute))
	var order grantOrder = make(chan string, 3)
	order.acquire(first, "first writer", redlock.WithRetry(redlock.Jittered(50*time.Millisecond, 60*time.Millisecond)))
	eventually(t, "the first writer queued", queuedInOrder(t, cluster, "doc", first.ID()))
	order.acquire(readers, "reader", redlock.WithShared(), wakeOnly)
	eventually(t, "the reader queued", queuedInOrder(t, cluster, "doc", first.ID(), readers.ID()+"+r"))
	order.acquire(later, "later writer", wakeOnly)
	eventually(t, "the later writer queued", queuedInOrder(t, cluster, "doc", first.ID(), readers.ID()+"+r", later.ID()))
	listeningOnEveryNode(t, cluster, later, "doc", 1)
	if err := held.Release(bg); err != nil {
		t.Fatal(err)
	}
	order.want(t, "first writer", "reader", "later writer")
}

// A reader yields to a writer waiting behind many readers' places: here
// 70 places of readers whose Client crashed while they waited (their
// entries stay until they lapse), more than a node looked through before.
func TestShared_readerYieldsToAWriterBehindManyReaders(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	held := holdOnEveryNode(t, cluster, holder, "doc", 20*time.Second)
	crowd := newClient(t, cluster, adapters[1], patientNodes(fast()))
	for range 70 {
		acquireLater(crowd, "doc", redlock.WithShared(), redlock.WithRetry(redlock.Jittered(time.Minute, time.Minute)))
	}
	eventually(t, "70 readers queued on every node", func() bool {
		return !slices.ContainsFunc(cluster.Nodes(), func(n *redlocktest.Node) bool { return len(queueEntries(t, n, "doc")) != 70 })
	})
	// The crowd's places lapse redlock.QueueLasts after the crash: the
	// clients below are made before it, so that the writer queues behind
	// the places well within that time, even on a loaded machine.
	others := newClient(t, cluster, adapters[0], patientNodes(fast()))
	writers := newClient(t, cluster, adapters[0], patientNodes(fast()))
	crowd.Crash()
	lapse := time.Now().Add(redlock.QueueLasts)
	if err := held.Release(bg); err != nil {
		t.Fatal(err)
	}
	reading, err := others.TryAcquire(bg, "doc", redlock.WithShared())
	if err != nil {
		t.Fatalf("a reader, while no writer waits: %v", err)
	}
	defer reading.Release(bg)
	acquireLater(writers, "doc", redlock.WithRetry(redlock.Jittered(time.Minute, time.Minute)))
	eventually(t, "the writer queued behind them on every node", func() bool {
		if time.Now().After(lapse) {
			t.Fatalf("the crowd's places lapsed before the writer queued behind them on every node")
		}
		return !slices.ContainsFunc(cluster.Nodes(), func(n *redlocktest.Node) bool {
			entries := queueEntries(t, n, "doc")
			return len(entries) != 71 || entries[70] != writers.ID()
		})
	})
	if r, err := others.TryAcquire(bg, "doc", redlock.WithShared()); err == nil {
		r.Release(bg)
		t.Fatal("a reader got in while a writer waited")
	}
}

// A release names the first live clients in line past the places that
// lapsed, however many: here twelve of readers whose Client crashed while
// they waited. Before, a release looked at eight and, finding nobody live,
// named nobody: it was announced on the key's channel, every writer woke,
// and a later one could take the key ahead of the first.
func TestShared_releaseNamesTheFirstWriterPastManyLapsedReaders(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	held := holdOnEveryNode(t, cluster, holder, "doc", 20*time.Second)
	crowd := newClient(t, cluster, adapters[1], patientNodes(fast()))
	wakeOnly := redlock.WithRetry(redlock.Jittered(time.Minute, time.Minute))
	for range 12 {
		acquireLater(crowd, "doc", redlock.WithShared(), wakeOnly)
	}
	queued := func(n int) func() bool {
		return func() bool {
			return !slices.ContainsFunc(cluster.Nodes(), func(node *redlocktest.Node) bool { return len(queueEntries(t, node, "doc")) != n })
		}
	}
	eventually(t, "12 readers queued on every node", queued(12))
	crowd.Crash()
	lapsed := time.Now().Add(redlock.QueueLasts)
	writers := newClient(t, cluster, adapters[0], patientNodes(fast()))
	acquireLater(writers, "doc", wakeOnly)
	eventually(t, "a writer queued behind them", queued(13))
	announced := subscribeReleases(t, cluster.Nodes()[0], "doc")
	time.Sleep(time.Until(lapsed)) // the readers' places lapse: a time to wait out, not an event
	if err := held.Release(bg); err != nil {
		t.Fatal(err)
	}
	if got, want := announced(), redlock.ReleaseChannel("doc", false)+" "+writers.ID(); got != want {
		t.Fatalf("the release announced on %q, want %q: naming the writer", got, want)
	}
}

// Sixteen goroutines of one Client on five nodes take a key in turns, one
// time in ten as writers, and the key never stays free for long while they
// wait. A reader's place once outlived the reader on a node: an attempt
// that did not reach the node before the call's next one won queued it
// there, and the lock's release, which cancels the winning attempt's
// request still waiting behind it, skipped the node. The writers deferred
// to that place until it lapsed, two seconds, and the readers to the
// writer: the bench's rwlock-5 case fell to three grants a second.
func TestShared_oneClientsReadersAndWritersNeverStall(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 5})
	c := newClient(t, cluster, adapters[1], &redlock.Options{})
	ctx, cancel := context.WithTimeout(bg, 4*time.Second)
	defer cancel()
	var last atomic.Int64 // when the last grant came, in nanoseconds since start
	start := time.Now()
	var longest atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for n := i; ctx.Err() == nil; n++ {
				var opts []redlock.LockOption
				if n%10 != 0 {
					opts = append(opts, redlock.WithShared())
				}
				l, err := c.Acquire(ctx, "rw", opts...)
				if err != nil {
					return
				}
				now := int64(time.Since(start))
				gap := now - last.Swap(now)
				for old := longest.Load(); gap > old && !longest.CompareAndSwap(old, gap); old = longest.Load() {
				}
				l.Release(bg)
			}
		})
	}
	wg.Wait()
	if gap := time.Duration(longest.Load()); gap > time.Second {
		t.Fatalf("no grant for %v while sixteen goroutines waited", gap)
	}
}

// grantOrder records the order in which waiters get the key "doc": each
// takes it, sends its name and releases it at once.
type grantOrder chan string

// acquire starts who's Acquire of "doc" on c.
func (g grantOrder) acquire(c *redlock.Client, who string, opts ...redlock.LockOption) {
	go func() {
		l := <-acquireLater(c, "doc", opts...)
		if l == nil {
			g <- who + " (not acquired)"
			return
		}
		g <- who
		l.Release(bg)
	}()
}

// want fails the test unless the waiters get the key in order.
func (g grantOrder) want(t *testing.T, order ...string) {
	t.Helper()
	for _, want := range order {
		if got := <-g; got != want {
			t.Fatalf("granted to the %s, want the %s next (order %q)", got, want, order)
		}
	}
}

// deafConns returns conns as plain Conns, without their optional
// capabilities: a Client over them hears no release announcement, and
// its waiters try at their retry delays.
func deafConns(conns []redlock.Conn) []redlock.Conn {
	deaf := make([]redlock.Conn, len(conns))
	for i, c := range conns {
		deaf[i] = struct{ redlock.Conn }{c}
	}
	return deaf
}

// A writer waiting in Acquire gets the key while readers of its own
// Client keep taking it, each overlapping the next: a reader's release
// leaves the writer's place in the nodes' queues alone, so that the readers
// are refused until the writer got in. Each writer is given writerBound,
// far more than it needs; a starved one waits out all of it.
func TestShared_writerNotStarvedByReadersOfItsClient(t *testing.T) {
	const writerBound = 2 * time.Second
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var reads atomic.Int64
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				lock, err := client.Acquire(ctx, "hot", redlock.WithShared())
				if err != nil {
					return
				}
				reads.Add(1)
				time.Sleep(50 * time.Millisecond) // the reader's work
				lock.Release(bg)
			}
		})
	}
	eventually(t, "the readers taking the key in turns", func() bool { return reads.Load() >= 8 })
	for i := range 4 {
		before := reads.Load()
		eventually(t, "the readers back in", func() bool { return reads.Load() >= before+8 })
		wctx, wcancel := context.WithTimeout(bg, writerBound)
		began := time.Now()
		w, err := client.Acquire(wctx, "hot")
		wcancel()
		t.Logf("writer %d waited %s, %d reads", i, time.Since(began), reads.Load())
		if err != nil {
			t.Errorf("writer %d starved by %d reads of its own client: %v", i, reads.Load(), err)
		}
		if err != nil {
			continue
		}
		readersLeave(t, client, w)
		if err := w.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
}

// A reader's release leaves the place of a writer of the same Client in
// the nodes' queues: the writer keeps new readers out, of its own Client
// and of others, until it got the key, which the last reader's release
// wakes it for.
func TestShared_readersReleaseKeepsTheWritersPlace(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	// Only a wake-up makes the writer try again: its first attempt must
	// reach every node.
	client := newClient(t, cluster, adapters[0], patientNodes(fast()))
	other := newClient(t, cluster, adapters[1], fast())
	var readers []*redlock.Lock
	for range 2 {
		r, err := client.TryAcquire(bg, "doc", redlock.WithShared(), redlock.WithTTL(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
	}
	eventually(t, "both readers on every node", func() bool { return readersOnAll(t, client, "doc", readers...) })
	writer := acquireLater(client, "doc", redlock.WithRetry(redlock.Jittered(time.Minute, time.Minute)))
	queued := queuedOnEveryNode(t, cluster, "doc", client)
	eventually(t, "the writer queued on every node", queued)

	if err := readers[1].Release(bg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reader's release on every node", func() bool { return readersOnAll(t, client, "doc", readers[0]) })
	if !queued() {
		t.Fatal("a reader's release took the waiting writer of its client out of the nodes' queues")
	}
	for _, c := range []*redlock.Client{client, other} {
		if _, err := c.TryAcquire(bg, "doc", redlock.WithShared()); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Fatalf("a new reader while the writer waits: %v, want ErrNotAcquired", err)
		}
	}
	listeningOnEveryNode(t, cluster, client, "doc", 1)
	readers[0].Release(bg)
	wantWoken(t, writer, "the writer, by the last reader's release")
}

// A release that names a Client wakes its reader and its writer waiting
// for the key: the reader, which began waiting first, takes it first, and
// the writer, which defers to it, at the reader's release.
func TestShared_releaseWakesTheReaderAndTheWriterOfItsClientInTurn(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	// Only a wake-up makes its waiters try again: their first attempts
	// must reach every node.
	slow := patientNodes(fast())
	slow.Retry = redlock.Jittered(time.Minute, time.Minute)
	client := newClient(t, cluster, adapters[1], slow)
	held := holdOnEveryNode(t, cluster, holder, "doc", 20*time.Second)
	waitForKey(t, cluster, "doc", held.Token())
	reader := acquireLater(client, "doc", redlock.WithShared())
	eventually(t, "the reader refused and listening", func() bool { return client.Listening("doc") == 1 })
	writer := acquireLater(client, "doc")
	eventually(t, "the reader and the writer queued on every node, in that order",
		queuedInOrder(t, cluster, "doc", client.ID()+"+r", client.ID()))
	listeningOnEveryNode(t, cluster, client, "doc", 2)
	held.Release(bg)
	wantWoken(t, reader, "the reader, by the release naming its client")
	wantWoken(t, writer, "the writer, by the reader's release")
}

// patientNodes returns opts with a per-node timeout that a node of a loaded
// machine running the race detector does not miss: for a waiter that
// tries only once before a wake-up, and must be queued on every node.
func patientNodes(opts *redlock.Options) *redlock.Options {
	opts.TTL, opts.NodeTimeout = 10*time.Second, 2*time.Second
	return opts
}

// queuedOnEveryNode returns a check that c's client id is the only one in
// the queue of key on every node of cluster.
func queuedOnEveryNode(t *testing.T, cluster *redlocktest.Cluster, key string, c *redlock.Client) func() bool {
	return queuedInOrder(t, cluster, key, c.ID())
}

// holdOnEveryNode takes key for holder with ttl, and makes sure that the
// lock stands on every node of cluster, as the tests that queue waiters on
// every node need: TryAcquire returns at a quorum, and on a busy host a
// node's grant may come after it, or not at all (the key free there, a
// waiter is granted it rather than queued). Such a node is given the
// lock's token here, as its grant would have set it.
func holdOnEveryNode(t *testing.T, cluster *redlocktest.Cluster, holder *redlock.Client, key string, ttl time.Duration) *redlock.Lock {
	t.Helper()
	lock, err := holder.TryAcquire(bg, key, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	left := strconv.FormatInt(time.Until(lock.Until()).Milliseconds(), 10)
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "SET", key, lock.Token(), "NX", "PX", left); err != nil && !errors.Is(err, redlocktest.ErrNil) {
			t.Fatal(err)
		}
		if v := do(t, n, "GET", key); v != lock.Token() {
			t.Fatalf("node %d holds %q under %s, not the holder's token", n.Index(), v, key)
		}
	}
	return lock
}

// queuedInOrder returns a check that the queue of key holds one entry
// for each of prefixes, in that order, on every node of cluster: a
// client's id, or a reader's entry (the id and "+r", then its number).
func queuedInOrder(t *testing.T, cluster *redlocktest.Cluster, key string, prefixes ...string) func() bool {
	return func() bool {
		for _, n := range cluster.Nodes() {
			entries := queueEntries(t, n, key)
			if len(entries) != len(prefixes) {
				return false
			}
			for i, p := range prefixes {
				if !strings.HasPrefix(entries[i], p) {
					return false
				}
			}
		}
		return true
	}
}

// queueEntries returns the entries of the queue of key on n, in order.
func queueEntries(t *testing.T, n *redlocktest.Node, key string) []string {
	queue, _ := redlock.QueueKeys(key)
	if entries := do(t, n, "ZRANGE", queue, "0", "-1"); entries != "" {
		return strings.Split(entries, "\n")
	}
	return nil
}

// readersQueued returns on how many nodes of cluster the queue of key
// holds an entry of a reader of c.
func readersQueued(t *testing.T, cluster *redlocktest.Cluster, key string, c *redlock.Client) (nodes int) {
	for _, n := range cluster.Nodes() {
		if slices.ContainsFunc(queueEntries(t, n, key), func(e string) bool { return strings.HasPrefix(e, c.ID()+"+r") }) {
			nodes++
		}
	}
	return nodes
}

// listeningOnEveryNode waits until n waiters of c listen for the releases
// of key, and every node of cluster has c's subscription to the channel on
// which a release names c (see lua/release.lua): a release announced
// before that wakes nobody.
func listeningOnEveryNode(t *testing.T, cluster *redlocktest.Cluster, c *redlock.Client, key string, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d waiters listening", n), func() bool { return c.Listening(key) == n })
	named := redlock.ReleaseChannel(key, false) + " " + c.ID()
	for _, node := range cluster.Nodes() {
		eventually(t, fmt.Sprint("the subscription on node ", node.Index()), func() bool {
			return slices.Contains(pubsubList(t, node, "CHANNELS"), named)
		})
	}
}

// readersLeave fails the test unless readers hold w's key on a
// minority of nodes at most while the writer w holds it, and leave every
// node before w's validity ends: Acquire returns at a quorum, and a
// reader's release may still be on its way to the last node then.
func readersLeave(t *testing.T, c *redlock.Client, w *redlock.Lock) {
	t.Helper()
	for {
		states, err := c.Inspect(bg, w.Key())
		if err != nil {
			t.Fatal(err)
		}
		var held []string
		for _, s := range states {
			if len(s.Readers) > 0 {
				held = append(held, fmt.Sprintf("%s: %v", s.Node, s.Readers))
			}
		}
		switch {
		case len(held) == 0:
			return
		case 2*len(held) >= len(states):
			t.Fatalf("readers on %d nodes of %d while the writer holds: %v", len(held), len(states), held)
		case time.Now().After(w.Until()):
			t.Fatalf("readers still there when the writer's validity ended: %v", held)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A reader that stops without releasing frees the key when its TTL passes,
// even while another reader extended the key's life and then left; a
// reader's Extend and Release work, and so do a release of an expired writer
// while readers hold (not held, not an error of the key's type).
func TestShared_expiryExtendAndRelease(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, fast())
		old, err := client.TryAcquire(bg, "doc", redlock.WithTTL(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		waitForKey(t, cluster, "doc", old.Token())
		time.Sleep(300 * time.Millisecond)
		crashed, err := client.TryAcquire(bg, "doc", redlock.WithShared(), redlock.WithTTL(time.Second))
		if err != nil {
			t.Fatalf("a reader once the writer expired: %v", err)
		}
		if err := old.Release(bg); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("the expired writer's release while a reader holds: %v, want ErrNotHeld", err)
		}
		long, err := client.TryAcquire(bg, "doc", redlock.WithShared(), redlock.WithTTL(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := long.Extend(bg, 5*time.Second); err != nil {
			t.Fatalf("a reader's Extend: %v", err)
		}
		if err := long.Release(bg); err != nil {
			t.Fatal(err)
		}
		if err := long.Release(bg); !errors.Is(err, redlock.ErrReleased) {
			t.Errorf("a second release: %v, want ErrReleased", err)
		}
		// crashed never releases: the key is free once its second passed,
		// not when the longer reader's TTL would have.
		time.Sleep(time.Until(crashed.Until()) + 100*time.Millisecond)
		w, err := client.TryAcquire(bg, "doc")
		if err != nil {
			t.Fatalf("a writer once the unreleased reader expired: %v", err)
		}
		// Nobody tried to keep it before it expired.
		if err := crashed.Extend(bg, time.Second); !errors.Is(err, redlock.ErrLockExpired) {
			t.Errorf("extending an expired reader: %v, want ErrLockExpired", err)
		}
		w.Release(bg)
		if _, err := client.TryAcquire(bg, "doc", redlock.WithShared(), redlock.WithLimit(2)); !errors.Is(err, redlock.ErrInvalidOptions) {
			t.Errorf("WithShared and WithLimit: %v, want ErrInvalidOptions", err)
		}
	})
}

// AcquireAll with WithShared reads several keys together: two readers of
// one set hold it at once, and a writer of one of its keys waits for both.
func TestShared_severalKeys(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	client := newClient(t, cluster, adapters[0], fast())
	other := newClient(t, cluster, adapters[1], fast())
	r1, err := client.TryAcquireAll(bg, []string{"acct:1", "acct:2"}, redlock.WithShared())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := other.TryAcquireAll(bg, []string{"acct:2", "acct:1"}, redlock.WithShared())
	if err != nil {
		t.Fatalf("a second reader of the set: %v", err)
	}
	eventually(t, "both readers of acct:2 on every node", func() bool {
		return readersOnAll(t, client, "acct:2", r1.Locks()[1], r2.Locks()[1])
	})
	if _, err := other.TryAcquire(bg, "acct:2"); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a writer of acct:2 while the set is read: %v, want ErrNotAcquired", err)
	}
	for _, r := range []*redlock.Locks{r1, r2} {
		if err := r.Release(bg); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	w, err := other.Acquire(ctx, "acct:2")
	if err != nil {
		t.Fatalf("a writer once the readers left: %v", err)
	}
	w.Release(bg)
}

// On a Redis Cluster node, permits of a semaphore spread over slots and a
// reader's release, announced on its slot's shard channel, wake a writer;
// a semaphore's waiter is woken by a permit's release in another slot.
func TestRedisCluster_semaphoreAndReaders(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	for _, a := range clusterAdapters {
		t.Run(a.name, func(t *testing.T) {
			opts := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond}
			slow := &redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond, Retry: redlock.Jittered(time.Minute, time.Minute)}
			c := clusterClient(t, cluster, a.conn, opts)
			waiter := clusterClient(t, cluster, a.conn, slow)

			r1, err := c.TryAcquire(bg, "report", redlock.WithShared())
			if err != nil {
				t.Fatal(err)
			}
			r2, err := c.TryAcquire(bg, "report", redlock.WithShared())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.TryAcquire(bg, "report"); !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("a writer while readers hold: %v", err)
			}
			writer := acquireLater(waiter, "report")
			time.Sleep(300 * time.Millisecond) // the writer tried and waits
			r1.Release(bg)
			r2.Release(bg)
			wantWoken(t, writer, "the writer, by the last reader's release")

			var permits []*redlock.Lock
			for range 2 {
				p, err := c.TryAcquire(bg, "pool", redlock.WithLimit(2))
				if err != nil {
					t.Fatal(err)
				}
				permits = append(permits, p)
			}
			next := acquireLater(waiter, "pool", redlock.WithLimit(2))
			time.Sleep(300 * time.Millisecond)
			permits[1].Release(bg)
			wantWoken(t, next, "the semaphore's waiter, by a permit's release")
			permits[0].Release(bg)
		})
	}
}

// acquireLater acquires name with c in the background, within 10 s.
func acquireLater(c *redlock.Client, name string, opts ...redlock.LockOption) <-chan *redlock.Lock {
	got := make(chan *redlock.Lock, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		l, _ := c.Acquire(ctx, name, opts...)
		got <- l
	}()
	return got
}

// wantWoken fails unless a lock comes from got within 5 s, far below the
// waiter's retry delay, and releases it.
func wantWoken(t *testing.T, got <-chan *redlock.Lock, who string) {
	t.Helper()
	select {
	case l := <-got:
		if l == nil {
			t.Fatalf("%s: not acquired", who)
		}
		l.Release(bg)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not woken", who)
	}
}

// A writer's release wakes every reader of a client waiting for the key,
// long before their retry delay, and they hold it together.
func TestShared_releaseWakesEveryReader(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	writer := newClient(t, cluster, adapters[0], lasting())
	// The readers retry only after a minute: each is granted by the wake-up.
	o, slow := observe(t)
	slow.TTL, slow.NodeTimeout, slow.Retry = 2*time.Second, 300*time.Millisecond, redlock.Jittered(time.Minute, time.Minute)
	readers := newClient(t, cluster, adapters[1], slow)
	w, err := writer.TryAcquire(bg, "page")
	if err != nil {
		t.Fatal(err)
	}
	waitForKey(t, cluster, "page", w.Token())
	const n = 8
	got := make(chan *redlock.Lock, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			l, _ := readers.Acquire(ctx, "page", redlock.WithShared())
			got <- l
		}()
	}
	// Every reader was refused by a majority, and so waits: a refusal
	// marks the key in the script that refuses.
	eventually(t, "every reader refused", func() bool {
		return o.recorded(t, "redlock.node.requests") &&
			o.sum(t, "redlock.node.requests", attrs{"redlock.op": "acquire", "redlock.outcome": "held"}) >= 2*n
	})
	w.Release(bg)
	var held []*redlock.Lock
	for range n {
		select {
		case l := <-got:
			if l == nil {
				t.Fatal("a reader was not granted")
			}
			held = append(held, l)
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d readers woken by the release", len(held), n)
		}
	}
	// Acquire returns at a quorum, and a node the writer's release reached
	// late refused the readers that came first: each reader is on a
	// majority of nodes.
	eventually(t, "every reader on a majority of nodes", func() bool { return readersOnMajority(t, readers, "page", held) })
	for _, l := range held {
		l.Release(bg)
	}
}

// readersOnMajority reports whether each of readers is listed on a
// majority of the nodes, and no node has a writer.
func readersOnMajority(t *testing.T, client *redlock.Client, key string, readers []*redlock.Lock) bool {
	t.Helper()
	states, err := client.Inspect(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]int{}
	for _, s := range states {
		if s.Err != nil || s.Holder != "" {
			return false
		}
		for _, r := range s.Readers {
			on[r]++
		}
	}
	for _, r := range readers {
		if 2*on[r.Token()] <= len(states) {
			return false
		}
	}
	return true
}

// A reader refused because a writer waits for the key is told that a
// writer is waiting, not that the key is held by another.
func TestShared_readerRefusedForWaitingWriter(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	readers := newClient(t, cluster, adapters[0], fast())
	writer := newClient(t, cluster, adapters[1], fast())
	r1, err := readers.TryAcquire(bg, "doc", redlock.WithShared(), redlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Release(bg)
	// r1's TryAcquire returned at a quorum: on a node it had not reached
	// yet, the writer would be granted for a moment and refuse the reader
	// as held.
	eventually(t, "the reader on every node", func() bool { return readersOnAll(t, readers, "doc", r1) })
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := writer.Acquire(ctx, "doc"); !errors.Is(err, context.Canceled) {
			t.Errorf("the writer: %v, want context.Canceled", err)
		}
	}()
	defer func() { <-done }()
	defer cancel()
	// Each attempt of the writer returns at a quorum: a node it did not
	// wait for may not queue it yet, and grants a reader there. A quorum
	// that queues it is what refuses readers.
	queue, _ := redlock.QueueKeys("doc")
	eventually(t, "the writer queued on a quorum of nodes", func() bool {
		queued := 0
		for _, n := range cluster.Nodes() {
			if do(t, n, "ZRANGE", queue, "0", "-1") == writer.ID() {
				queued++
			}
		}
		return queued >= writer.Quorum()
	})

	_, err = readers.TryAcquire(bg, "doc", redlock.WithShared())
	if !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a reader while a writer waits: %v, want ErrNotAcquired", err)
	}
	msg := err.Error()
	if strings.Count(msg, "a writer is waiting") < readers.Quorum() || strings.Contains(msg, "held by another") {
		t.Errorf("a reader while a writer waits: %q, want a writer waiting on a quorum of nodes", msg)
	}
}

// A reader that waited in Acquire leaves the key's queue where a node
// granted it, and, with its release, on the nodes that refused it: a
// reader's place left behind would make the writers that came after it
// defer to it. One node here still holds another client's lock when the
// others free it.
func TestShared_readersReleaseLeavesItsPlace(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	readers := newClient(t, cluster, adapters[1], patientNodes(fast()))
	held := holdOnEveryNode(t, cluster, holder, "doc", 20*time.Second)
	waitForKey(t, cluster, "doc", held.Token())
	reader := acquireLater(readers, "doc", redlock.WithShared(), redlock.WithRetry(redlock.Jittered(20*time.Millisecond, 30*time.Millisecond)))
	eventually(t, "the reader queued on every node", queuedInOrder(t, cluster, "doc", readers.ID()+"+r"))
	for _, n := range cluster.Nodes()[:2] {
		do(t, n, "DEL", "doc")
	}
	r := <-reader
	if r == nil {
		t.Fatal("the reader: not acquired")
	}
	if queued := readersQueued(t, cluster, "doc", readers); queued != 1 {
		t.Fatalf("the reader's entry on %d nodes while it holds, want 1: the node that refused it", queued)
	}
	if err := r.Release(bg); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	for readersQueued(t, cluster, "doc", readers) > 0 {
		if time.Since(released) > redlock.QueueLasts*3/4 {
			t.Fatalf("the reader's entry still queued %v after its release", redlock.QueueLasts*3/4)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A reader waiting in Acquire that gives up leaves the key's queue: it
// returns once a quorum of the nodes took its entry out, so that a writer
// that comes right after is not held back for it, and the other nodes
// follow at once, well before its entry would lapse (QueueLasts).
func TestShared_readerThatGaveUpLetsWritersIn(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
	holder := newClient(t, cluster, adapters[0], fast())
	readers := newClient(t, cluster, adapters[1], fast())
	writers := newClient(t, cluster, adapters[0], fast())
	held := holdOnEveryNode(t, cluster, holder, "doc", 20*time.Second)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	_, err := readers.Acquire(ctx, "doc", redlock.WithShared())
	cancel()
	gaveUp := time.Now()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the reader: %v, want DeadlineExceeded", err)
	}
	if err := held.Release(bg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(bg, redlock.QueueLasts/4)
	w, err := writers.Acquire(ctx, "doc")
	cancel()
	if err != nil {
		t.Fatalf("a writer right after the waiting reader gave up: %v", err)
	}
	w.Release(bg)
	for left := gaveUp.Add(redlock.QueueLasts * 3 / 4); ; time.Sleep(5 * time.Millisecond) {
		queued := readersQueued(t, cluster, "doc", readers)
		if queued == 0 {
			break
		}
		if time.Now().After(left) {
			t.Fatalf("the reader that gave up is still queued on %d nodes %v later", queued, redlock.QueueLasts*3/4)
		}
	}
}

// A writer that gives up leaves the key's queue on every node as it
// returns: the readers it kept out get in at once, not once its entry
// lapsed, two seconds later.
func TestShared_writerThatGaveUpLetsReadersIn(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		readers := newClient(t, cluster, a, fast())
		writer := newClient(t, cluster, a, fast())
		r1, err := readers.TryAcquire(bg, "doc", redlock.WithShared(), redlock.WithTTL(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer r1.Release(bg)
		eventually(t, "the reader on every node", func() bool { return readersOnAll(t, readers, "doc", r1) })
		ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
		_, err = writer.Acquire(ctx, "doc")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the writer: %v, want DeadlineExceeded", err)
		}
		// It returns once a quorum of the nodes took it out of the queue:
		// a reader right after gets in.
		r2, err := readers.TryAcquire(bg, "doc", redlock.WithShared())
		if err != nil {
			t.Fatalf("a reader right after the waiting writer gave up: %v", err)
		}
		r2.Release(bg)
		// The other nodes follow at once, well before its entry would
		// lapse (QueueLasts).
		queue, _ := redlock.QueueKeys("doc")
		left := time.Now().Add(redlock.QueueLasts * 3 / 4)
		for gone := 0; gone < 3; {
			if time.Now().After(left) {
				t.Fatalf("the writer that gave up is still queued on %d nodes %v later", 3-gone, redlock.QueueLasts*3/4)
			}
			gone = 0
			for _, n := range cluster.Nodes() {
				if do(t, n, "ZSCORE", queue, writer.ID()) == "" {
					gone++
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

const (
	// reshardHold is how long a goroutine of the load holds each lock:
	// long enough for the holdings of one key to be distinct intervals,
	// short next to the TTL, so that none outlives its validity.
	reshardHold = time.Millisecond
	// reshardStep is the pause between the keys migrated one by one,
	// which keeps the slot migrating for a while, so that the load meets
	// ASK and TRYAGAIN replies, and not only MOVED after the move.
	reshardStep = 50 * time.Millisecond
	// reshardLiveness bounds how long, after the move, every goroutine may
	// take to get its lock once: the moved slot's recovery delay, plus a
	// loaded machine's slack.
	reshardLiveness = 20 * time.Second
)

// A slot moves to another master (IMPORTING, MIGRATING, MIGRATE key by
// key, SETSLOT NODE) while goroutines of four Clients, two per adapter,
// as separate processes would be, lock and unlock keys of that slot and of
// others without pause. The redirections on the way (MOVED, ASK, TRYAGAIN)
// are transient: no acquisition fails. No two holders of a key overlap,
// fencing tokens increase in grant order, and every goroutine gets its
// lock again after the move, once the moved slot has sat out its recovery
// delay on its new master.
func TestRedisCluster_reshardUnderLoad(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	opts := &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 500 * time.Millisecond, RecoveryDelay: 2 * time.Second}
	moving := []string{"{moving}.a", "{moving}.b"}
	from := cluster.NodeForKey(moving[0])
	to := otherMaster(cluster, from)
	keys := append(slices.Clone(moving), keyServedBy(t, cluster, from), keyServedBy(t, cluster, to))
	clients := reshardClients(t, cluster, opts)

	load := startLoad(clients, keys)
	time.Sleep(time.Second) // the load runs on the slot map the clients start with
	migrateSlowly(t, redlocktest.KeySlot(moving[0]), from, to)
	moved := time.Now()
	t.Logf("slot moved in %v", time.Since(load.began).Round(time.Millisecond))
	if err := load.waitEachGranted(moved, reshardLiveness); err != nil {
		load.stop()
		t.Fatal(err)
	}
	t.Logf("every goroutine locked again %v after the move", time.Since(moved).Round(time.Millisecond))
	load.stop()

	for _, err := range load.errs {
		t.Error(err)
	}
	checkHoldings(t, load.holdings)
	t.Logf("%d grants of %d keys; %d releases failed (the lock then stood until its TTL)", len(load.holdings), len(keys), load.releaseErrs)
	checkRedirected(t, from, to)
}

// otherMaster returns a master of cluster other than n.
func otherMaster(cluster *redlocktest.Cluster, n *redlocktest.Node) *redlocktest.Node {
	return cluster.Node((n.Index() + 1) % len(cluster.Nodes()))
}

// reshardClients returns four Clients of cluster, each with a connection
// of its own, two per adapter; the first marks every slot ready.
func reshardClients(t *testing.T, cluster *redlocktest.Cluster, opts *redlock.Options) []*redlock.Client {
	t.Helper()
	clients := []*redlock.Client{clusterClient(t, cluster, clusterAdapters[0].conn, opts)}
	for _, a := range []int{1, 0, 1} {
		c, err := redlock.New([]redlock.Conn{clusterAdapters[a].conn(t, cluster.Addrs())}, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	return clients
}

// holding is one grant of a lock: its key, its fencing token, and the
// time its holder held it, from the grant's return until the release was
// sent, or the lock's validity ended if that was earlier.
type holding struct {
	key        string
	fence      uint64
	start, end time.Time
}

// load is goroutines that lock and unlock keys until stopped: one per
// client and key.
type load struct {
	began  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	holdings    []holding
	last        []time.Time // by goroutine, when its last grant returned
	errs        []error
	releaseErrs int
}

// startLoad starts a goroutine per client and key.
func startLoad(clients []*redlock.Client, keys []string) *load {
	ctx, cancel := context.WithCancel(bg)
	l := &load{began: time.Now(), cancel: cancel, last: make([]time.Time, len(clients)*len(keys))}
	for i, c := range clients {
		for j, key := range keys {
			l.wg.Go(func() { l.run(ctx, i*len(keys)+j, c, key) })
		}
	}
	return l
}

// run locks and unlocks key with c until ctx ends, recording each holding
// under goroutine number g. An acquisition that fails before ctx ends is
// an error of the test: the load waits as long as it takes.
func (l *load) run(ctx context.Context, g int, c *redlock.Client, key string) {
	for ctx.Err() == nil {
		lock, err := c.Acquire(ctx, key)
		if err != nil {
			if ctx.Err() == nil {
				l.fail(fmt.Errorf("goroutine %d, %s: %w", g, key, err))
			}
			return
		}
		start := time.Now()
		time.Sleep(reshardHold)
		end := time.Now()
		if until := lock.Until(); until.Before(end) {
			end = until
		}
		err = lock.Release(bg)
		l.record(g, holding{key: key, fence: lock.Fence(), start: start, end: end}, err)
	}
}

// record adds a holding of goroutine g, and counts a failed release.
func (l *load) record(g int, h holding, releaseErr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdings = append(l.holdings, h)
	l.last[g] = h.start
	if releaseErr != nil {
		l.releaseErrs++
	}
}

// fail records an error of a goroutine.
func (l *load) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

// waitEachGranted waits until every goroutine got its lock after since,
// for at most limit, or until one of them failed.
func (l *load) waitEachGranted(since time.Time, limit time.Duration) error {
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		l.mu.Lock()
		waiting := slices.IndexFunc(l.last, func(t time.Time) bool { return t.Before(since) })
		failed := len(l.errs) > 0
		l.mu.Unlock()
		switch {
		case waiting < 0 || failed:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("goroutine %d got no lock within %v after the move", waiting, limit)
		}
	}
}

// stop ends the load and waits for its goroutines.
func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

// checkHoldings checks, key by key, that no two holdings overlap and that
// fencing tokens increase in the order of the grants.
func checkHoldings(t *testing.T, holdings []holding) {
	t.Helper()
	byKey := map[string][]holding{}
	for _, h := range holdings {
		byKey[h.key] = append(byKey[h.key], h)
	}
	for key, hs := range byKey {
		slices.SortFunc(hs, func(a, b holding) int { return a.start.Compare(b.start) })
		latest := hs[0] // the holding that ends last among those before h
		for i := 1; i < len(hs); i++ {
			prev, h := hs[i-1], hs[i]
			if h.start.Before(latest.end) {
				t.Errorf("%s: held from %s with token %d while held until %s with token %d",
					key, h.start.Format(time.StampMicro), h.fence, latest.end.Format(time.StampMicro), latest.fence)
			}
			if h.fence <= prev.fence {
				t.Errorf("%s: token %d granted after token %d", key, h.fence, prev.fence)
			}
			if h.end.After(latest.end) {
				latest = h
			}
		}
	}
}

// migrateSlowly moves slot and its keys from one master to another, as
// migrateSlot does, but one key at a time with a pause in between.
func migrateSlowly(t *testing.T, slot int, from, to *redlocktest.Node) {
	t.Helper()
	s := strconv.Itoa(slot)
	do(t, to, "CLUSTER", "SETSLOT", s, "IMPORTING", from.ID())
	do(t, from, "CLUSTER", "SETSLOT", s, "MIGRATING", to.ID())
	for {
		keys := strings.Fields(do(t, from, "CLUSTER", "GETKEYSINSLOT", s, "1"))
		if len(keys) == 0 {
			break
		}
		do(t, from, "MIGRATE", "127.0.0.1", strconv.Itoa(to.Port()), keys[0], "0", "5000")
		time.Sleep(reshardStep)
	}
	for _, n := range []*redlocktest.Node{to, from} {
		do(t, n, "CLUSTER", "SETSLOT", s, "NODE", to.ID())
	}
}

// checkRedirected checks that the load met the move: the old master sent
// MOVED replies, and the two masters ASK or TRYAGAIN replies while the
// slot migrated.
func checkRedirected(t *testing.T, from, to *redlocktest.Node) {
	t.Helper()
	count := func(n *redlocktest.Node, code string) int {
		for line := range strings.Lines(do(t, n, "INFO", "errorstats")) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+code+":count="); ok {
				c, _ := strconv.Atoi(strings.Split(v, ",")[0])
				return c
			}
		}
		return 0
	}
	t.Logf("old master: %s", do(t, from, "INFO", "errorstats"))
	t.Logf("new master: %s", do(t, to, "INFO", "errorstats"))
	if count(from, "MOVED") == 0 {
		t.Error("no MOVED reply from the old master: the load did not meet the move")
	}
	if count(from, "ASK")+count(from, "TRYAGAIN")+count(to, "TRYAGAIN") == 0 {
		t.Error("no ASK or TRYAGAIN reply: the load did not meet the migration")
	}
}

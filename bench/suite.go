package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/report"
	"github.com/redlock-go/redlock/bench/internal/runner"
)

// Workload sizes from the benchmark's specification.
const (
	maxNodes        = 5
	parallelWorkers = 64
	sharedWorkers   = 8
	// roundTripPings is how many PINGs measure the loopback round trip at
	// the start; roundTripSample how many are sent before each round.
	roundTripPings  = 2000
	roundTripSample = 200
	// setupTimeout bounds starting the nodes and opening one library.
	setupTimeout = 30 * time.Second
	// laterWarmupDivisor shortens the warm-up of every round after the
	// first: connections are already open, only the goroutines restart.
	laterWarmupDivisor = 5
	// crowdAcquireTimeout is the deadline of each acquisition by a client
	// of a crowd: long beside a handoff (under a millisecond to tens of
	// milliseconds), so that one that runs out was starved, not unlucky.
	crowdAcquireTimeout = 5 * time.Second
	// crowdHold is how long a client of a crowd keeps the lock: a tiny
	// critical section, spent on the CPU (see runner.Case.Hold), short
	// beside a handoff so that the rate measures the lock.
	crowdHold = 20 * time.Microsecond
	// lockKindWorkers are the goroutines of one client on the semaphore
	// and on the read-write lock, semaphoreLimit the semaphore's permits:
	// four goroutines for each permit keep every one contended.
	lockKindWorkers = 16
	semaphoreLimit  = 4
	// semaphoreClients are the clients that share the lockKindWorkers
	// goroutines in the case of several clients on one semaphore, as
	// separate processes would.
	semaphoreClients = 4
	// writeEvery makes one cycle in this many a writer's on the read-write
	// lock: 10% writers, 90% readers, a read-mostly resource.
	writeEvery = 10
)

// benchCase is a workload on a node topology.
type benchCase struct {
	report.Case
	work runner.Case
}

// sizes are the workload sizes that flags choose.
type sizes struct {
	crowd    int           // separate clients on one shared key
	lanDelay time.Duration // added each way in front of every node in the network cases
}

// cases lists every case, grouped by workload so that the chart reads left
// to right: one goroutine (on loopback, then over a network), many
// goroutines, one shared key (one client's goroutines, then separate
// clients waiting, then separate clients looping one attempt), then one
// client's goroutines on a semaphore and on a read-write lock.
func cases(sz sizes) []benchCase {
	type topology struct {
		suffix, title, short string
		nodes, slow          int
	}
	loopback := []topology{
		{"-1", "1 node", "1 node", 1, 0},
		{"-5", "5 nodes", "5 nodes", 5, 0},
		{"-5slow", "5 nodes, one slow", "5 nodes, 1 slow", 5, 1},
	}
	network := []topology{
		{"-1", "1 node over a LAN", "1 node, LAN", 1, 0},
		{"-5", "5 nodes over a LAN", "5 nodes, LAN", 5, 0},
	}
	crowd := strconv.Itoa(sz.crowd) + " clients"
	lk, permits := strconv.Itoa(lockKindWorkers), strconv.Itoa(semaphoreLimit)
	semClients := strconv.Itoa(semaphoreClients) + " clients"
	workloads := []struct {
		id, title, short string
		work             runner.Case
		clients          int
		tops             []topology
	}{
		{"serial", "1 goroutine, new key per cycle", "1 goroutine", runner.Case{Workers: 1, Keys: runner.NewKeyEachCycle}, 0, loopback},
		{"lan", "1 goroutine, new key per cycle", "1 goroutine", runner.Case{Workers: 1, Keys: runner.NewKeyEachCycle}, 0, network},
		{"parallel", "64 goroutines, distinct keys", "64 goroutines", runner.Case{Workers: parallelWorkers, Keys: runner.KeyPerWorker}, 0, loopback},
		{"shared", "8 goroutines, one shared key", "8 on one key", runner.Case{Workers: sharedWorkers, Keys: runner.SharedKey}, 0, loopback},
		{"crowd", crowd + ", one shared key", crowd + "\non one key", crowdCase(sz.crowd), sz.crowd, loopback[:2]},
		{"tryloop", crowd + " looping one attempt, one shared key", crowd + "\ntrying one key", tryLoopCase(sz.crowd), sz.crowd, loopback[:2]},
		{"semaphore", lk + " goroutines, a semaphore of " + permits + " permits", lk + " on " + permits + " permits", lockKindCase(semaphoreLimit, 0), 0, loopback[:2]},
		{"semclients", lk + " goroutines over " + semClients + ", a semaphore of " + permits + " permits",
			lk + " over " + semClients + "\non " + permits + " permits", lockKindCase(semaphoreLimit, 0), semaphoreClients, loopback[:1]},
		{"rwlock", lk + " goroutines, a read-write lock, 1 cycle in " + strconv.Itoa(writeEvery) + " writes", lk + " on RW lock", lockKindCase(0, writeEvery), 0, loopback[:2]},
	}
	var cs []benchCase
	for _, w := range workloads {
		for _, t := range w.tops {
			c := benchCase{
				Case: report.Case{
					ID: w.id + t.suffix, Title: w.title + ", " + t.title, Short: w.short + "\n" + t.short,
					Workers: w.work.Workers, Nodes: t.nodes, SlowNodes: t.slow, Handoffs: w.work.Keys == runner.SharedKey,
					Clients: w.clients, AcquireTimeoutS: w.work.AcquireTimeout.Seconds(),
					Limit: w.work.Limit, WriteEvery: w.work.WriteEvery, Try: w.work.Try,
				},
				work: w.work,
			}
			if w.id == "lan" {
				c.DelayUs = float64(sz.lanDelay) / float64(time.Microsecond)
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// crowdCase is the workload of clients separate clients on one shared key,
// each waiting for it as callers do: with a deadline.
func crowdCase(clients int) runner.Case {
	return runner.Case{Workers: clients, Keys: runner.SharedKey, AcquireTimeout: crowdAcquireTimeout, Hold: crowdHold}
}

// tryLoopCase is the crowd's workload with every client taking the key by
// one attempt at a time (drivers.TryLoop) rather than by its library's
// blocking acquire, under the same deadline.
func tryLoopCase(clients int) runner.Case {
	c := crowdCase(clients)
	c.Try = true
	return c
}

// lockKindCase is the workload of one client's goroutines on one name
// taken as a semaphore of limit permits, or as a read-write lock of which
// one cycle in writeEvery writes: a tiny hold as in the crowd, and a
// deadline on each acquisition, so that a goroutine starved shows.
func lockKindCase(limit, writeEvery int) runner.Case {
	return runner.Case{
		Workers: lockKindWorkers, Keys: runner.SharedKey, AcquireTimeout: crowdAcquireTimeout, Hold: crowdHold,
		Limit: limit, WriteEvery: writeEvery,
	}
}

func caseIDs() string {
	var ids []string
	for _, c := range cases(sizes{crowd: defaultCrowd}) {
		ids = append(ids, c.ID)
	}
	return strings.Join(ids, ", ")
}

// selectCases returns the cases whose id cfg selects, and the libraries.
func selectCases(cfg config, all []benchCase) ([]benchCase, []drivers.Library, error) {
	var selected []benchCase
	for _, c := range all {
		if cfg.cases.MatchString(c.ID) {
			selected = append(selected, c)
		}
	}
	if len(selected) == 0 {
		return nil, nil, errNothingSelected
	}
	libs, err := selectLibs(cfg)
	return selected, libs, err
}

// errNothingSelected is returned when -cases or -libs match nothing.
var errNothingSelected = errors.New("no case or no library selected")

// selectLibs returns the libraries whose name cfg selects.
func selectLibs(cfg config) ([]drivers.Library, error) {
	var libs []drivers.Library
	for _, l := range drivers.All() {
		if cfg.libs.MatchString(l.Name) {
			libs = append(libs, l)
		}
	}
	if len(libs) == 0 {
		return nil, errNothingSelected
	}
	return libs, nil
}

// runSuite starts the nodes, runs every selected case with every selected
// library, and returns the report.
func runSuite(ctx context.Context, cfg config, logs *clientLog, progress io.Writer) (*report.Report, error) {
	selected, libs, err := selectCases(cfg, cases(cfg.sizes))
	if err != nil {
		return nil, err
	}
	s, rep, err := newSession(ctx, cfg, logs, maxNodes, libs)
	if err != nil {
		return nil, err
	}
	defer s.close()
	for _, c := range selected {
		rep.Cases = append(rep.Cases, c.Case)
	}
	if err := s.run(ctx, rep, s.plan(rep, selected, libs), progress); err != nil {
		return nil, err
	}
	rep.Meta.ProxyOverheadUs = float64(s.topo.lanCalibration.Overhead) / float64(time.Microsecond)
	sortRows(rep)
	return rep, nil
}

// sortRows orders the rows by case, then library, as the report lists them.
func sortRows(rep *report.Report) {
	order := map[string]int{}
	for i, c := range rep.Cases {
		order["c"+c.ID] = i
	}
	for i, l := range rep.Libraries {
		order["l"+l.Name] = i
	}
	slices.SortStableFunc(rep.Rows, func(a, b report.Row) int {
		if d := order["c"+a.Case] - order["c"+b.Case]; d != 0 {
			return d
		}
		return order["l"+a.Library] - order["l"+b.Library]
	})
}

// meta describes the run and the machine.
func meta(cfg config, rtt time.Duration) report.Meta {
	return report.Meta{
		Date:          time.Now(),
		Command:       cfg.command,
		Commit:        commit(),
		GoVersion:     runtime.Version(),
		Platform:      runtime.GOOS + "/" + runtime.GOARCH,
		GOMAXPROCS:    runtime.GOMAXPROCS(0),
		CPUModel:      cpuModel(),
		RedisVersion:  redisVersion(cfg.server),
		RoundTripUs:   float64(rtt) / float64(time.Microsecond),
		DurationSec:   cfg.duration.Seconds(),
		WarmupSec:     cfg.warmup.Seconds(),
		Rounds:        cfg.rounds,
		SlowLatencyMs: float64(cfg.slowLatency) / float64(time.Millisecond),
	}
}

// commit returns the short hash of the checked-out commit, if git knows it.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// cpuModel returns the first "model name" of /proc/cpuinfo, if any.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// redisVersion returns the "v=" field of redis-server --version.
func redisVersion(server string) string {
	out, err := exec.Command(server, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return strings.TrimSpace(string(out))
}

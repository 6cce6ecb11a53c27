package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/bench/internal/drivers"
	"github.com/redlock-go/redlock/bench/internal/nodes"
	"github.com/redlock-go/redlock/bench/internal/report"
)

// memoryWorkers is how many goroutines take and release the names of the
// memory measurement: enough to go through ten thousand names in seconds,
// few enough that no library's pool runs dry.
const memoryWorkers = 8

// memoryAcquireTimeout bounds one acquisition of the memory measurement,
// whose names are never contended: a library that cannot take one in this
// long is broken, and the measurement goes on without that name.
const memoryAcquireTimeout = 5 * time.Second

// residue is one library's part of the memory measurement.
type residue struct {
	row      *report.MemoryRow
	servers  *nodes.Set
	before   []nodes.Usage
	released time.Time
}

// runMemory measures what distinct lock names leave on the nodes: every
// selected library acquires and releases cfg.memoryNames names on new
// nodes of its own, then its clients are closed, and the nodes' memory and
// keys are read at once and again cfg.memoryWait after the last release.
// The libraries share the wait.
func runMemory(ctx context.Context, cfg config) (*report.Memory, error) {
	libs, err := selectLibs(cfg)
	if err != nil {
		return nil, err
	}
	m := &report.Memory{Meta: meta(cfg, 0), Names: cfg.memoryNames, Workers: memoryWorkers, WaitS: cfg.memoryWait.Seconds()}
	var rs []*residue
	defer func() {
		for _, r := range rs {
			r.servers.Close()
		}
	}()
	for _, l := range libs {
		m.Libraries = append(m.Libraries, report.Library{Name: l.Name, Ours: l.Ours, Baseline: l.Baseline, Floor: l.Floor, Trade: l.Trade, Settings: l.Settings})
		r, err := leaveNames(ctx, cfg, l, &m.Meta)
		if r != nil {
			rs = append(rs, r)
		}
		if err != nil {
			return nil, err
		}
	}
	var last time.Time
	for _, r := range rs {
		if r.released.After(last) {
			last = r.released
		}
	}
	if err := sleepUntil(ctx, last.Add(cfg.memoryWait)); err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.row.NA == "" {
			after, err := r.servers.Usage(ctx)
			if err != nil {
				return nil, err
			}
			r.row.BytesPerName, r.row.KeysPerName = perName(r.before, after, cfg.memoryNames)
			r.row.WaitedS = time.Since(r.released).Seconds()
		}
		m.Rows = append(m.Rows, *r.row)
	}
	return m, nil
}

// leaveNames starts new nodes for l, takes and releases the names on them,
// closes l's clients and reads what the names left at once.
func leaveNames(ctx context.Context, cfg config, l drivers.Library, m *report.Meta) (*residue, error) {
	count := maxNodes
	if l.MaxNodes > 0 {
		count = min(count, l.MaxNodes)
	}
	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	servers, err := nodes.Start(setupCtx, cfg.server, count)
	if err != nil {
		return nil, err
	}
	r := &residue{row: &report.MemoryRow{Library: l.Name, Nodes: count}, servers: servers}
	if m.RoundTripUs == 0 {
		if rtt, err := nodes.RoundTrip(setupCtx, servers.Addrs()[0], roundTripPings); err == nil {
			m.RoundTripUs = float64(rtt) / float64(time.Microsecond)
		}
	}
	if m.MarkedReady, err = drivers.MarkReady(setupCtx, servers.Addrs()); err != nil {
		return r, err
	}
	if r.before, err = servers.Usage(ctx); err != nil {
		return r, err
	}
	d, err := l.Open(setupCtx, servers.Addrs(), false)
	if err != nil {
		r.row.NA = "open failed: " + err.Error()
		return r, nil
	}
	r.row.Errors, r.row.LastError = lockNames(ctx, d, cfg.memoryNames)
	d.Close()
	r.released = time.Now()
	now, err := servers.Usage(ctx)
	if err != nil {
		return r, err
	}
	r.row.BytesPerNameAfterRelease, r.row.KeysPerNameAfterRelease = perName(r.before, now, cfg.memoryNames)
	return r, ctx.Err()
}

// lockNames acquires and releases the names "bench:mem:0" to
// "bench:mem:<n-1>" with d, each once, and returns how many cycles failed
// and the last failure.
func lockNames(ctx context.Context, d drivers.Driver, n int) (int64, string) {
	var next, failed atomic.Int64
	var last atomic.Value
	var wg sync.WaitGroup
	for range memoryWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n) && ctx.Err() == nil; i = next.Add(1) - 1 {
				if err := lockOnce(ctx, d, "bench:mem:"+strconv.FormatInt(i, 10)); err != nil {
					failed.Add(1)
					last.Store(err.Error())
				}
			}
		}()
	}
	wg.Wait()
	lastErr, _ := last.Load().(string)
	return failed.Load(), lastErr
}

// lockOnce acquires name with d and releases it.
func lockOnce(ctx context.Context, d drivers.Driver, name string) error {
	actx, cancel := context.WithTimeout(ctx, memoryAcquireTimeout)
	defer cancel()
	held, err := d.Acquire(actx, name)
	if err != nil {
		return err
	}
	return d.Release(ctx, held)
}

// perName returns the mean growth per node from before to after of the
// used memory and the keys, each divided by names.
func perName(before, after []nodes.Usage, names int) (bytes, keys float64) {
	for i := range before {
		bytes += float64(after[i].UsedMemory - before[i].UsedMemory)
		keys += float64(after[i].Keys - before[i].Keys)
	}
	n := float64(len(before) * names)
	return bytes / n, keys / n
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("memory: %w", ctx.Err())
	}
}

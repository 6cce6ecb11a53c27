package drivers

import (
	"context"
	"errors"
	"fmt"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/rueidis"
)

const redlockSettings = "redlock.Options{TTL: 10s}, otherwise defaults: NodeTimeout 50 ms, " +
	"drift 1% + 2 ms, the default Retry (exponential jitter 10 ms to 200 ms, until ctx ends). " +
	"Acquire + Lock.Release; TryAcquire for one attempt in the try-loop cases."

func redlockGoredis() Library {
	return Library{
		Name:      "redlock/goredis",
		Ours:      true,
		Settings:  redlockSettings + " go-redis v9 pools via goredis.Dial (go-redis defaults, no command retries).",
		Semaphore: NativeSemaphore,
		ReadWrite: NativeReadWrite,
		Open: func(ctx context.Context, addrs []string, _ bool) (Driver, error) {
			urls := make([]string, len(addrs))
			for i, a := range addrs {
				urls[i] = "redis://" + a
			}
			c, err := goredis.Dial(ctx, urls, &redlock.Options{TTL: TTL})
			if err != nil {
				return nil, err
			}
			return redlockDriver{c}, nil
		},
	}
}

func redlockRueidis() Library {
	return Library{
		Name:      "redlock/rueidis",
		Ours:      true,
		Settings:  redlockSettings + " One rueidis client per node (DisableCache, ForceSingleClient).",
		Semaphore: NativeSemaphore,
		ReadWrite: NativeReadWrite,
		Open: func(_ context.Context, addrs []string, _ bool) (Driver, error) {
			return openRueidis(addrs, &redlock.Options{TTL: TTL})
		},
	}
}

// NoQuarantineName names the row of redlock over rueidis with the restart
// quarantine off (Options.DisableQuarantine), which trades the safety of
// locks across node restarts and failovers for less work per acquisition.
const NoQuarantineName = "redlock/rueidis, no quarantine"

func redlockRueidisNoQuarantine() Library {
	return Library{
		Name:    NoQuarantineName,
		TradeOf: "redlock/rueidis",
		Trade: "the restart quarantine (Options.DisableQuarantine: a node that restarted or failed over " +
			"votes at once; safe only with appendfsync always and no replica that can take over)",
		Settings: "As redlock/rueidis, with redlock.Options{DisableQuarantine: true}: " +
			"the acquire script neither reads the node's run_id (INFO) nor checks the restart marker.",
		Semaphore: NativeSemaphore,
		ReadWrite: NativeReadWrite,
		Open: func(_ context.Context, addrs []string, _ bool) (Driver, error) {
			return openRueidis(addrs, &redlock.Options{TTL: TTL, DisableQuarantine: true})
		},
	}
}

// openRueidis opens a Client with opts over one rueidis client per node.
func openRueidis(addrs []string, opts *redlock.Options) (Driver, error) {
	clients, err := rueidisClients(addrs)
	if err != nil {
		return nil, err
	}
	conns := make([]redlock.Conn, len(clients))
	for i, c := range clients {
		conns[i] = rueidis.NewOwned(c)
	}
	c, err := redlock.New(conns, opts)
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	return redlockDriver{c}, nil
}

// readier is implemented by clients that keep freshly started nodes out of
// quorums until told they are ready.
type readier interface {
	MarkReady(ctx context.Context, force bool) error
}

// MarkReady declares the nodes at addrs ready to vote, where this version of
// the library has a restart quarantine: the benchmark's nodes are new and
// empty, with no lock outstanding. It reports whether the library had such a
// step. It is called once, over direct connections, since the state lives on
// the nodes.
func MarkReady(ctx context.Context, addrs []string) (bool, error) {
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = "redis://" + a
	}
	c, err := goredis.Dial(ctx, urls, nil)
	if err != nil {
		return false, err
	}
	defer c.Close()
	r, ok := any(c).(readier)
	if !ok {
		return false, nil
	}
	if err := r.MarkReady(ctx, false); err != nil {
		return true, fmt.Errorf("mark nodes ready: %w", err)
	}
	return true, nil
}

type redlockDriver struct{ c *redlock.Client }

func (d redlockDriver) Acquire(ctx context.Context, key string) (any, error) {
	return d.c.Acquire(ctx, key)
}

// TryAcquire makes one attempt on key; a refusal (ErrNotAcquired, other
// than for a reason no retry fixes) wraps errTaken.
func (d redlockDriver) TryAcquire(ctx context.Context, key string) (any, error) {
	l, err := d.c.TryAcquire(ctx, key)
	if errors.Is(err, redlock.ErrNotAcquired) && !errors.Is(err, redlock.ErrInvalidOptions) {
		return nil, fmt.Errorf("%w: %w", errTaken, err)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// AcquirePermit takes one of limit permits of the semaphore key.
func (d redlockDriver) AcquirePermit(ctx context.Context, key string, limit int) (any, error) {
	return d.c.Acquire(ctx, key, redlock.WithLimit(limit))
}

// AcquireShared takes the read-write lock key as a reader.
func (d redlockDriver) AcquireShared(ctx context.Context, key string) (any, error) {
	return d.c.Acquire(ctx, key, redlock.WithShared())
}

func (d redlockDriver) Release(ctx context.Context, held any) error {
	return held.(*redlock.Lock).Release(ctx)
}

func (d redlockDriver) Close() { d.c.Close() }

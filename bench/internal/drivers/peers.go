package drivers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncpool "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	rueidisclient "github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

func redsyncLibrary() Library {
	return Library{
		Name: "redsync",
		Settings: "redsync v4 over go-redis v9 pools (go-redis defaults). WithExpiry(10s), " +
			"WithTries(MaxInt32), WithRetryDelayFunc(the same exponential jitter, 10 ms to 200 ms); " +
			"otherwise defaults: drift 1%, per-node timeout 5% of expiry, no fail-fast " +
			"(waits for every node). A new Mutex per cycle, LockContext + UnlockContext; " +
			"TryLockContext for one attempt in the semaphore and try-loop cases.",
		Semaphore: HandMadeSemaphore,
		ReadWrite: MutexReadWrite,
		Open: func(ctx context.Context, addrs []string, _ bool) (Driver, error) {
			clients := make([]*redis.Client, len(addrs))
			pools := make([]redsyncpool.Pool, len(addrs))
			for i, a := range addrs {
				clients[i] = redis.NewClient(&redis.Options{Addr: a})
				pools[i] = redsyncgoredis.NewPool(clients[i])
			}
			return &redsyncDriver{
				rs:      redsync.New(pools...),
				clients: clients,
				opts: []redsync.Option{
					redsync.WithExpiry(TTL),
					redsync.WithTries(math.MaxInt32),
					redsync.WithRetryDelayFunc(retryDelay),
				},
			}, nil
		},
	}
}

type redsyncDriver struct {
	rs      *redsync.Redsync
	clients []*redis.Client
	opts    []redsync.Option
}

func (d *redsyncDriver) Acquire(ctx context.Context, key string) (any, error) {
	m := d.rs.NewMutex(key, d.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// TryAcquire makes one attempt on key with a new Mutex.
func (d *redsyncDriver) TryAcquire(ctx context.Context, key string) (any, error) {
	m := d.rs.NewMutex(key, d.opts...)
	if err := m.TryLockContext(ctx); err != nil {
		return nil, redsyncTaken(err)
	}
	return m, nil
}

// redsyncTaken wraps errTaken around err if it says the lock is held by
// others: on a majority of the nodes (ErrTaken), on some of them
// (ErrNodeTaken), or not granted by a majority (ErrFailed).
func redsyncTaken(err error) error {
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	if errors.As(err, &taken) || errors.As(err, &nodeTaken) || errors.Is(err, redsync.ErrFailed) {
		return fmt.Errorf("%w: %w", errTaken, err)
	}
	return err
}

func (d *redsyncDriver) Release(ctx context.Context, held any) error {
	ok, err := held.(*redsync.Mutex).UnlockContext(ctx)
	if err == nil && !ok {
		err = errors.New("redsync: not unlocked")
	}
	return err
}

func (d *redsyncDriver) Close() {
	for _, c := range d.clients {
		c.Close()
	}
}

func rueidislockLibrary() Library {
	return Library{
		Name:     "rueidislock",
		MaxNodes: 1,
		Settings: "rueidislock (rueidis v1.0.79) on one node: KeyValidity 10s, otherwise defaults: " +
			"KeyMajority 2 (3 keys per lock on the one node), extension every KeyValidity/2, " +
			"waiters woken by client-side caching invalidations. WithContext + its cancel func; " +
			"TryWithContext for one attempt in the semaphore and try-loop cases.",
		Semaphore: HandMadeSemaphore,
		ReadWrite: MutexReadWrite,
		Open: func(ctx context.Context, addrs []string, _ bool) (Driver, error) {
			l, err := rueidislock.NewLocker(rueidislock.LockerOption{
				ClientOption: rueidisclient.ClientOption{InitAddress: addrs},
				KeyValidity:  TTL,
			})
			if err != nil {
				return nil, err
			}
			return rueidislockDriver{l}, nil
		},
	}
}

type rueidislockDriver struct{ l rueidislock.Locker }

func (d rueidislockDriver) Acquire(ctx context.Context, key string) (any, error) {
	_, cancel, err := d.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return cancel, nil
}

// TryAcquire makes one attempt on key.
func (d rueidislockDriver) TryAcquire(ctx context.Context, key string) (any, error) {
	_, cancel, err := d.l.TryWithContext(ctx, key)
	if errors.Is(err, rueidislock.ErrNotLocked) {
		return nil, fmt.Errorf("%w: %w", errTaken, err)
	}
	if err != nil {
		return nil, err
	}
	return cancel, nil
}

func (d rueidislockDriver) Release(_ context.Context, held any) error {
	held.(context.CancelFunc)() // deletes the keys and waits for the answers
	return nil
}

func (d rueidislockDriver) Close() { d.l.Close() }

func bsmLibrary() Library {
	return Library{
		Name:     "bsm/redislock",
		MaxNodes: 1,
		Settings: "bsm/redislock v0.9.4 on one node, go-redis v9 client (defaults). Obtain with TTL 10s; " +
			"where keys are contended, a RetryStrategy with the same exponential jitter (10 ms to " +
			"200 ms): its strategies keep per-call state, so Options and strategy are allocated per " +
			"call; otherwise nil Options (no retry), as for one attempt in the semaphore and try-loop cases. " +
			"Obtain + Lock.Release.",
		Semaphore: HandMadeSemaphore,
		ReadWrite: MutexReadWrite,
		Open: func(ctx context.Context, addrs []string, contended bool) (Driver, error) {
			if len(addrs) != 1 {
				return nil, fmt.Errorf("bsm/redislock locks on one node, not %d", len(addrs))
			}
			c := redis.NewClient(&redis.Options{Addr: addrs[0]})
			return &bsmDriver{client: c, locker: redislock.New(c), contended: contended}, nil
		},
	}
}

type bsmDriver struct {
	client    *redis.Client
	locker    *redislock.Client
	contended bool
}

func (d *bsmDriver) Acquire(ctx context.Context, key string) (any, error) {
	var opts *redislock.Options
	if d.contended {
		opts = &redislock.Options{RetryStrategy: &bsmRetry{}}
	}
	return d.locker.Obtain(ctx, key, TTL, opts)
}

// TryAcquire makes one attempt on key: Obtain without a retry strategy.
func (d *bsmDriver) TryAcquire(ctx context.Context, key string) (any, error) {
	l, err := d.locker.Obtain(ctx, key, TTL, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, fmt.Errorf("%w: %w", errTaken, err)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (d *bsmDriver) Release(ctx context.Context, held any) error {
	return held.(*redislock.Lock).Release(ctx)
}

func (d *bsmDriver) Close() { d.client.Close() }

// bsmRetry paces bsm/redislock's retries like the other libraries'.
type bsmRetry struct{ n int }

func (r *bsmRetry) NextBackoff() time.Duration {
	r.n++
	return retryDelay(r.n)
}

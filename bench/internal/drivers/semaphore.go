package drivers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// How the libraries take a semaphore's permit and a read-write lock, for
// the report: this project's library has both, the peers have neither and
// run the nearest substitute a caller would write (AcquirePermit,
// AcquireShared).
const (
	NativeSemaphore   = "native: Acquire with WithLimit"
	HandMadeSemaphore = "hand-made: a mutex per permit"
	NativeReadWrite   = "native: readers with WithShared, writers without"
	MutexReadWrite    = "a plain mutex for readers and writers alike"
)

// permitInfix joins a semaphore's name and a permit's number in the name of
// the permit's mutex, as this project's semaphores name their permits.
const permitInfix = ":permit:"

// errTaken is what a trier returns when the lock it tried is held by
// someone else.
var errTaken = errors.New("held by another owner")

// errNoSemaphore is returned for a driver that can neither take a permit
// nor try a lock once.
var errNoSemaphore = errors.New("no semaphore and no single try")

// permitDriver is a Driver whose library has semaphores.
type permitDriver interface {
	// AcquirePermit blocks until one of limit permits of the semaphore
	// named key is held, or ctx ends.
	AcquirePermit(ctx context.Context, key string, limit int) (held any, err error)
}

// trier is a Driver whose library can try a lock once without waiting.
type trier interface {
	// TryAcquire makes one attempt on the lock named key. It returns an
	// error wrapping errTaken if someone else holds it.
	TryAcquire(ctx context.Context, key string) (held any, err error)
}

// AcquirePermit takes one of limit permits of the semaphore named key with
// d, blocking until one is held or ctx ends; held is what d.Release needs.
// A library with semaphores takes it its own way. For the others it is
// made by hand, as a caller without semaphores would: a mutex per permit,
// named key:permit:i, each tried once without waiting, in turn from a
// random one on so that callers spread over the permits; when every one is
// held, it waits the retry delay the libraries share (retryDelay, the
// pacing redsync and bsm/redislock are given in every case) and tries them
// all again.
func AcquirePermit(ctx context.Context, d Driver, key string, limit int) (any, error) {
	if p, ok := d.(permitDriver); ok {
		return p.AcquirePermit(ctx, key, limit)
	}
	t, ok := d.(trier)
	if !ok {
		return nil, fmt.Errorf("%T: %w", d, errNoSemaphore)
	}
	for attempt := 1; ; attempt++ {
		held, err := tryPermits(ctx, t, key, limit)
		if err == nil || !errors.Is(err, errTaken) {
			return held, err
		}
		if err := sleep(ctx, retryDelay(attempt)); err != nil {
			return nil, err
		}
	}
}

// tryPermits tries each of limit permits of the semaphore key once, from a
// random one on, and returns the first granted. It stops at an error other
// than a permit held by someone else; if every permit was held, its error
// wraps errTaken.
func tryPermits(ctx context.Context, t trier, key string, limit int) (any, error) {
	first := rand.IntN(limit)
	for j := range limit {
		held, err := t.TryAcquire(ctx, key+permitInfix+strconv.Itoa((first+j)%limit+1))
		if err == nil || !errors.Is(err, errTaken) {
			return held, err
		}
	}
	return nil, fmt.Errorf("all %d permits of %s: %w", limit, key, errTaken)
}

// sleep waits d, or until ctx ends and returns its error.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

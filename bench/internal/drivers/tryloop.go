package drivers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// TryPauseMin and TryPauseMax bound the random pause of TryLoop after a
// refused attempt: a caller that loops on a single try and pauses briefly,
// as the torture harness's workers do by default (2 to 10 ms). Short beside
// the shared retry delay (10 to 200 ms), so that many clients make attempts
// that overlap, and whether a library's refused attempts step aside in time
// for one of them to win is what the case measures.
const (
	TryPauseMin = 2 * time.Millisecond
	TryPauseMax = 10 * time.Millisecond
)

// errNoTry is returned for a driver that cannot try a lock once.
var errNoTry = errors.New("no single try")

// TryLoop takes the lock named key with d by one attempt at a time, until
// one is granted or ctx ends, as a caller that loops on its library's
// single try would: this project's TryAcquire, redsync's TryLockContext,
// rueidislock's TryWithContext, bsm/redislock's Obtain without a retry
// strategy. After each refusal it pauses a random time between TryPauseMin
// and TryPauseMax. It stops at an error other than the lock held by
// someone else; held is what d.Release needs.
func TryLoop(ctx context.Context, d Driver, key string) (any, error) {
	t, ok := d.(trier)
	if !ok {
		return nil, fmt.Errorf("%T: %w", d, errNoTry)
	}
	for {
		held, err := t.TryAcquire(ctx, key)
		if err == nil || !errors.Is(err, errTaken) {
			return held, err
		}
		if err := sleep(ctx, tryPause()); err != nil {
			return nil, err
		}
	}
}

// tryPause returns a random pause between TryPauseMin and TryPauseMax.
func tryPause() time.Duration {
	return TryPauseMin + rand.N(TryPauseMax-TryPauseMin+1)
}

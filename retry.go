package redlock

import (
	"math/rand/v2"
	"time"
)

// RetryStrategy decides how long Acquire waits between attempts. It holds no
// per-call state, so one value may be shared by all calls and goroutines.
// The pause is the longest a waiter waits: a release announced by the
// nodes, or one of this client, ends it at once, and the attempt that
// follows counts as the next, so that a strategy that gives up after n
// attempts gives up after n attempts, not after n of its pauses. To bound
// a wait by time, bound ctx instead. A pause under a millisecond counts as
// a millisecond.
type RetryStrategy interface {
	// NextDelay returns the pause before attempt number attempt (2 for the
	// first retry), or false to give up.
	NextDelay(attempt int) (time.Duration, bool)
}

type exponential struct{ base, max time.Duration }

// ExponentialJitter doubles the delay from base after every attempt up to max,
// and waits a random time between half of it and all of it. A base of 0
// or less starts from 1 ms; a max below base keeps the delay at max.
func ExponentialJitter(base, max time.Duration) RetryStrategy {
	if base <= 0 {
		base = time.Millisecond
	}
	if max < base {
		base = max
		if base <= 0 {
			base = time.Millisecond
		}
		max = base
	}
	return exponential{base: base, max: max}
}

func (e exponential) NextDelay(attempt int) (time.Duration, bool) {
	d := e.max
	if shift := attempt - 2; shift < 30 {
		if s := e.base << max(shift, 0); s < d {
			d = s
		}
	}
	return randomBetween(d/2, d), true
}

func randomBetween(min, max time.Duration) time.Duration {
	if max <= min {
		return min
	}
	return min + rand.N(max-min+1)
}

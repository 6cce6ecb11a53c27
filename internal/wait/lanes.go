package wait

import (
	"context"
	"sync"
)

// Lanes are the turns of a client's goroutines waiting for a permit of a
// semaphore: up to a semaphore's limit of them try at once, each for
// permits that the others do not ask for (the root package's permit
// claims), so that they never split the nodes' votes among themselves;
// the others queue, first come first served. A lane is taken for a whole
// call, as a Turn is.
type Lanes struct {
	mu      sync.Mutex
	keys    map[string]*laneState
	tickets uint64 // numbers the calls of Take in the order they came
}

// laneState is one semaphore's lanes.
type laneState struct {
	taken   int             // lanes in use
	waiting []chan struct{} // goroutines queued, oldest first; closed when handed a lane
}

// Take waits for one of the n lanes of key, or for ctx to end, and reports
// whether it took one, which the caller must give back (GiveBack). ticket
// numbers the call among those of every key in the order they came: the
// older calls' offers go first (see Offers.Put).
func (l *Lanes) Take(ctx context.Context, key string, n int) (ticket uint64, taken bool) {
	l.mu.Lock()
	l.tickets++
	ticket = l.tickets
	if l.keys == nil {
		l.keys = map[string]*laneState{}
	}
	s := l.keys[key]
	if s == nil {
		s = &laneState{}
		l.keys[key] = s
	}
	if s.taken < n && len(s.waiting) == 0 {
		s.taken++
		l.mu.Unlock()
		return ticket, true
	}
	handed := make(chan struct{})
	s.waiting = append(s.waiting, handed)
	l.mu.Unlock()

	select {
	case <-handed:
		return ticket, true
	case <-ctx.Done():
	}
	l.mu.Lock()
	for i, w := range s.waiting {
		if w == handed {
			s.waiting = append(s.waiting[:i:i], s.waiting[i+1:]...)
			l.mu.Unlock()
			return ticket, false
		}
	}
	l.mu.Unlock()
	l.GiveBack(key) // handed a lane as ctx ended: pass it on
	return ticket, false
}

// GiveBack ends the caller's lane on key, handing it to the oldest
// goroutine queued.
func (l *Lanes) GiveBack(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.keys[key]
	if len(s.waiting) > 0 {
		close(s.waiting[0])
		s.waiting = s.waiting[1:]
		return
	}
	s.taken--
	if s.taken == 0 {
		delete(l.keys, key)
	}
}

// queued returns how many goroutines wait for a lane of key.
func (l *Lanes) queued(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.keys[key]; s != nil {
		return len(s.waiting)
	}
	return 0
}

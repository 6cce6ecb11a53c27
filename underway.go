package redlock

import (
	"sync"
	"time"
)

// underway counts the acquisitions under way (Acquire, AcquireAll and
// their Try forms), for Close to wait for before the connections close: a
// call that Close ends takes its place out of the queues it waited in, so
// that the next in line is not held back until the place lapses
// (QueueLasts), and a call that won as Close began releases what it won
// (see releaseWonAtClose).
type underway struct {
	mu sync.Mutex
	n  int
	// ended, made by wait, closes when n drops to 0.
	ended chan struct{}
}

// enter counts a call in; exit must follow.
func (u *underway) enter() {
	u.mu.Lock()
	u.n++
	u.mu.Unlock()
}

// exit counts a call out.
func (u *underway) exit() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n--; u.n == 0 && u.ended != nil {
		close(u.ended)
		u.ended = nil
	}
}

// wait waits until no call is under way, at most bound.
func (u *underway) wait(bound time.Duration) {
	u.mu.Lock()
	if u.n == 0 {
		u.mu.Unlock()
		return
	}
	if u.ended == nil {
		u.ended = make(chan struct{})
	}
	ended := u.ended
	u.mu.Unlock()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
	}
}

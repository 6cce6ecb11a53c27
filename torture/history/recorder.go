package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
)

// subscriberBuffer is how many events a subscriber may lag behind before
// further events are dropped for it. Recording never waits for a slow
// subscriber: the history must not be delayed by the fault injectors that
// watch it.
const subscriberBuffer = 256

// Recorder collects the events of one run, in memory and as JSON lines on
// an io.Writer, and passes them to subscribers as they arrive. It is safe
// for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	w      *bufio.Writer
	enc    *json.Encoder
	err    error
	events []Event
	subs   map[int]subscriber
	nextID int
	seq    map[string]int64
}

type subscriber struct {
	match func(Event) bool
	ch    chan Event
}

// NewRecorder returns a Recorder that writes JSON lines to w (nil for
// memory only). Call Flush before reading what w received.
func NewRecorder(w io.Writer) *Recorder {
	r := &Recorder{subs: map[int]subscriber{}, seq: map[string]int64{}}
	if w != nil {
		r.w = bufio.NewWriter(w)
		r.enc = json.NewEncoder(r.w)
	}
	return r
}

// Append records ev. It does not block on subscribers.
func (r *Recorder) Append(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	if r.enc != nil && r.err == nil {
		r.err = r.enc.Encode(ev)
	}
	for _, s := range r.subs {
		if s.match(ev) {
			select {
			case s.ch <- ev:
			default:
			}
		}
	}
}

// NextID returns a fresh operation id for process, for events the harness
// records on that process's behalf (the register, the nemesis).
func (r *Recorder) NextID(process string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq[process]++
	return r.seq[process]
}

// Subscribe returns a channel that receives every event appended from now
// on for which match returns true, and a function that ends the
// subscription. Events are dropped for a subscriber that falls more than a
// few hundred events behind.
func (r *Recorder) Subscribe(match func(Event) bool) (<-chan Event, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.nextID
	r.nextID++
	ch := make(chan Event, subscriberBuffer)
	r.subs[id] = subscriber{match: match, ch: ch}
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.subs, id)
	}
}

// Events returns a copy of the events recorded so far, in the order they
// were appended (which is not quite time order: workers' events arrive
// through pipes).
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Flush writes buffered lines to the underlying writer and returns the
// first write error, if any.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil && r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err != nil {
		return fmt.Errorf("history: write: %w", r.err)
	}
	return nil
}

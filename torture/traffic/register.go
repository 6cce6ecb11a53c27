package traffic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redlock-go/redlock/torture/history"
)

// ErrStale means the fenced register refused a request because its fencing
// token is older than one the register has already seen.
var ErrStale = errors.New("traffic: stale fencing token")

// Mode says whether the register checks fencing tokens.
type Mode int

const (
	// Unfenced accepts every read and write, like a resource that trusts
	// the lock alone.
	Unfenced Mode = iota
	// Fenced refuses a read or a write whose token is below the highest
	// token seen so far, and a write whose token is not above the last
	// token written. Reads count: a read-modify-write whose read carried
	// token t and whose write carries t is refused if any request with a
	// higher token came in between, so no update read by one holder can be
	// overwritten by an older holder's late write, even while two holders
	// overlap. A read by a reader of a read-write lock is refused only when
	// its token is below the last token written: readers do not exclude
	// each other, and their tokens, from the writers' counter, rise with
	// every grant; a reader's read still counts as seen, so that a writer
	// older than a reader that read is refused.
	Fenced
	// WriteFenced checks only writes: it refuses a write whose token is not
	// above the last token written, and serves every read. That is the rule
	// of package fence's Store.Write used without ReadFenced (Write also
	// accepts a holder's token again), and it is enough against a holder that
	// resumes after others wrote; but while two holders overlap, the older
	// one can read, let the newer one read the same value, write first,
	// and have its update overwritten by the newer one's.
	WriteFenced
)

// String returns "unfenced", "fenced" or "write-fenced".
func (m Mode) String() string {
	switch m {
	case Fenced:
		return "fenced"
	case WriteFenced:
		return "write-fenced"
	}
	return "unfenced"
}

// Register is a set of integer registers, each named by the lock key that
// guards it (one for a lock, one per permit of a semaphore), served over
// HTTP on 127.0.0.1 and held by the harness process. Each register has its
// own value, versions and fencing state. It records every request it
// serves in the history, under history.ProcRegister with the register's
// name as Key, in the order it serves them. Its methods are safe for
// concurrent use.
type Register struct {
	mode Mode
	rec  *history.Recorder
	srv  *http.Server
	url  string
	done chan struct{}

	mu     sync.Mutex
	cells  map[string]*cell // by name
	onRead func(worker string)
}

// cell is one named register.
type cell struct {
	value   int64
	version int64  // number of accepted writes
	seen    uint64 // highest token of any request served
	written uint64 // token of the last accepted write
}

// registerRequest is the body of a read or write request.
type registerRequest struct {
	Worker string `json:"worker"`
	// Register names the register; "" is a register like any other.
	Register string `json:"register"`
	Fence    uint64 `json:"fence"`
	// Shared marks a read by a reader of a read-write lock.
	Shared  bool  `json:"shared"`
	Value   int64 `json:"value"`
	BasedOn int64 `json:"based_on"`
}

// registerReply is the body of every answer.
type registerReply struct {
	OK      bool   `json:"ok"`
	Value   int64  `json:"value"`
	Version int64  `json:"version"`
	Err     string `json:"err,omitempty"`
}

// StartRegister starts a register on a free port of 127.0.0.1, recording
// into rec. Close stops it.
func StartRegister(mode Mode, rec *history.Recorder) (*Register, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("traffic: register: %w", err)
	}
	r := &Register{mode: mode, rec: rec, url: "http://" + ln.Addr().String(), done: make(chan struct{}), cells: map[string]*cell{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /read", r.handleRead)
	mux.HandleFunc("POST /write", r.handleWrite)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// URL returns the register's base URL.
func (r *Register) URL() string { return r.url }

// Mode returns the register's mode.
func (r *Register) Mode() Mode { return r.mode }

// OnRead sets a function called after each read is applied and recorded
// and before it is answered, with the reading worker's name. Fault
// injectors use it to stop a worker at a known point of its critical
// section. The function may block; the read's answer waits for it.
func (r *Register) OnRead(f func(worker string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onRead = f
}

// Value returns the value of the register named name and the number of
// writes it accepted.
func (r *Register) Value(name string) (value, version int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cell(name)
	return c.value, c.version
}

// cell returns the register named name, new if need be. The caller holds
// r.mu.
func (r *Register) cell(name string) *cell {
	c := r.cells[name]
	if c == nil {
		c = &cell{}
		r.cells[name] = c
	}
	return c
}

// Close stops serving, closing open connections, and waits for the server
// to stop.
func (r *Register) Close() error {
	err := r.srv.Close()
	<-r.done
	return err
}

func (r *Register) handleRead(w http.ResponseWriter, req *http.Request) {
	in, ok := decodeRequest(w, req)
	if !ok {
		return
	}
	r.mu.Lock()
	c := r.cell(in.Register)
	ev := history.Event{Process: history.ProcRegister, Op: history.OpRead, Key: in.Register, Worker: in.Worker, Fence: in.Fence, Shared: in.Shared}
	reply := registerReply{OK: true, Value: c.value, Version: c.version}
	switch {
	case r.mode == Fenced && in.Shared && in.Fence < c.written:
		reply = registerReply{Err: fmt.Sprintf("token %d is below %d, already written", in.Fence, c.written)}
	case r.mode == Fenced && !in.Shared && in.Fence < c.seen:
		reply = registerReply{Err: fmt.Sprintf("token %d is below %d, already seen", in.Fence, c.seen)}
	default:
		c.seen = max(c.seen, in.Fence)
	}
	r.record(ev, reply)
	hook := r.onRead
	r.mu.Unlock()
	if hook != nil && reply.OK {
		hook(in.Worker)
	}
	writeReply(w, reply)
}

func (r *Register) handleWrite(w http.ResponseWriter, req *http.Request) {
	in, ok := decodeRequest(w, req)
	if !ok {
		return
	}
	r.mu.Lock()
	c := r.cell(in.Register)
	ev := history.Event{Process: history.ProcRegister, Op: history.OpWrite, Key: in.Register, Worker: in.Worker, Fence: in.Fence, BasedOn: in.BasedOn}
	var reply registerReply
	switch {
	case r.mode == Fenced && in.Fence < c.seen:
		reply.Err = fmt.Sprintf("token %d is below %d, already seen", in.Fence, c.seen)
	case r.mode != Unfenced && in.Fence <= c.written:
		reply.Err = fmt.Sprintf("token %d is not above %d, already written", in.Fence, c.written)
	default:
		c.value = in.Value
		c.version++
		c.seen = max(c.seen, in.Fence)
		c.written = in.Fence
		reply = registerReply{OK: true, Value: c.value, Version: c.version}
	}
	if !reply.OK {
		reply.Value = in.Value
	}
	r.record(ev, reply)
	r.mu.Unlock()
	writeReply(w, reply)
}

// record appends a served request to the history. The caller holds r.mu,
// so the history has the register's own order.
func (r *Register) record(ev history.Event, reply registerReply) {
	ev.Time = history.Now()
	ev.ID = r.rec.NextID(history.ProcRegister)
	ev.Type, ev.Value, ev.Version, ev.Err = history.OK, reply.Value, reply.Version, reply.Err
	if !reply.OK {
		ev.Type, ev.Version = history.Fail, 0
	}
	r.rec.Append(ev)
}

func decodeRequest(w http.ResponseWriter, req *http.Request) (registerRequest, bool) {
	var in registerRequest
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return in, false
	}
	return in, true
}

func writeReply(w http.ResponseWriter, reply registerReply) {
	w.Header().Set("Content-Type", "application/json")
	if !reply.OK {
		w.WriteHeader(http.StatusConflict)
	}
	_ = json.NewEncoder(w).Encode(reply)
}

// registerTimeout bounds one register request. It is long on purpose: a
// worker paused by SIGSTOP in the middle of a request must find the answer
// waiting when it resumes, not a timeout, or it would never make the late
// write that the pause is meant to provoke.
const registerTimeout = 30 * time.Second

// registerClient is a worker's connection to the register.
type registerClient struct {
	base string
	http *http.Client
}

func newRegisterClient(base string) *registerClient {
	return &registerClient{base: base, http: &http.Client{
		Timeout:   registerTimeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: 2, Proxy: nil},
	}}
}

// read reads the register named register, sending fence.
func (c *registerClient) read(ctx context.Context, worker, register string, fence uint64) (registerReply, error) {
	return c.call(ctx, "/read", registerRequest{Worker: worker, Register: register, Fence: fence})
}

// readShared reads the register named register as read does, for a reader
// of a read-write lock: a fenced register refuses it only when a write
// with a newer token was accepted (see Fenced).
func (c *registerClient) readShared(ctx context.Context, worker, register string, fence uint64) (registerReply, error) {
	return c.call(ctx, "/read", registerRequest{Worker: worker, Register: register, Fence: fence, Shared: true})
}

// write writes value, computed from version basedOn, to the register named
// register, sending fence, and returns the version the register gave it.
func (c *registerClient) write(ctx context.Context, worker, register string, fence uint64, value, basedOn int64) (int64, error) {
	r, err := c.call(ctx, "/write", registerRequest{Worker: worker, Register: register, Fence: fence, Value: value, BasedOn: basedOn})
	return r.Version, err
}

func (c *registerClient) call(ctx context.Context, path string, in registerRequest) (registerReply, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return registerReply{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return registerReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return registerReply{}, fmt.Errorf("traffic: register %s: %w", path, err)
	}
	defer resp.Body.Close()
	var out registerReply
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return registerReply{}, fmt.Errorf("traffic: register %s: %s: %w", path, resp.Status, err)
	}
	if resp.StatusCode == http.StatusConflict {
		return out, fmt.Errorf("%w: %s", ErrStale, out.Err)
	}
	if !out.OK {
		return out, fmt.Errorf("traffic: register %s: %s: %s", path, resp.Status, out.Err)
	}
	return out, nil
}

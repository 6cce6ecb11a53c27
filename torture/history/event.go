package history

// Type says what an Event records.
type Type string

// The event types. An operation is an Invoke followed by one of OK, Fail or
// Info with the same Process and ID; a fault is a Start and an End with the
// same Process and ID, or a single Info for an instantaneous one.
const (
	Invoke Type = "invoke" // an operation began
	OK     Type = "ok"     // it took effect
	Fail   Type = "fail"   // it certainly did not take effect
	Info   Type = "info"   // its outcome is unknown, or an instantaneous fact
	Start  Type = "start"  // a fault began
	End    Type = "end"    // a fault ended
)

// Operation names used by workers and the register.
const (
	OpAcquire = "acquire"
	OpRelease = "release"
	OpRead    = "read"
	OpWrite   = "write"
)

// Process names that are not workers.
const (
	ProcRegister = "register"
	ProcNemesis  = "nemesis"
)

// Event is one line of a history. Fields that do not apply to an event are
// left out of its JSON.
type Event struct {
	// Time is CLOCK_MONOTONIC in nanoseconds (see Now).
	Time int64 `json:"t"`
	// Process is who recorded the event: "worker-<i>", ProcRegister or
	// ProcNemesis.
	Process string `json:"process"`
	Type    Type   `json:"type"`
	// Op is the operation (OpAcquire, ...) or the fault's kind.
	Op string `json:"op"`
	// ID pairs an invocation with its completion, or a fault's start with
	// its end, within one Process.
	ID int64 `json:"id,omitempty"`

	// Worker is the worker a register event or a worker fault is about.
	Worker string `json:"worker,omitempty"`
	// Key is a lock key. On an acquisition's invocation and failure it is
	// the name asked for; on its grant and on a release, the key held, which
	// for a semaphore is one permit's (name:permit:i). On a register event
	// it names the register: the key its caller held.
	Key string `json:"key,omitempty"`
	// Limit is set on the invocation of an acquisition that takes one of
	// Limit permits of Key (a counting semaphore); 0 for a lock.
	Limit int `json:"limit,omitempty"`
	// Shared marks a reader of a read-write lock: set on the invocation of
	// an acquisition that takes Key shared (redlock.WithShared), and on the
	// register's record of a reader's read. A writer takes the same name
	// without it.
	Shared bool `json:"shared,omitempty"`
	// Names, on the invocation and failure of an acquisition of several
	// names together (Client.AcquireAll), lists them in the order the
	// worker asked for them; Key is then empty.
	Names []string `json:"names,omitempty"`
	// Locks, on the grant of several names together and on the invocation
	// and completion of the release of such a set, holds each lock of the
	// set; Key, Token, Fence and Deadline are then empty, and Deadline on a
	// release is each lock's.
	Locks []HeldLock `json:"locks,omitempty"`
	// Token is the acquisition's random token.
	Token string `json:"token,omitempty"`
	// Fence is the acquisition's fencing token; 0 when there is none.
	Fence uint64 `json:"fence,omitempty"`
	// Deadline is the lock's validity deadline on the monotonic clock, set
	// on a granted acquisition, and on the invocation of a renewed lock's
	// release, where it is the last deadline the renewals reached.
	Deadline int64 `json:"deadline,omitempty"`
	// TTL, on a granted acquisition of a lock that is not renewed, is the
	// TTL it was granted for, in nanoseconds: the client's validity
	// deadline is at most TTL after the start of the attempt that won, so
	// the lock was taken after Deadline minus TTL (see check.Grant.Since).
	TTL int64 `json:"ttl,omitempty"`
	// Nodes is each node's answer, in node order.
	Nodes []NodeOutcome `json:"nodes,omitempty"`

	// Value is the register value read or written.
	Value int64 `json:"value,omitempty"`
	// Version is the register version read, or assigned to an accepted
	// write.
	Version int64 `json:"version,omitempty"`
	// BasedOn is the version a write's value was computed from.
	BasedOn int64 `json:"based_on,omitempty"`

	// Target names what a fault hits: "n2", "worker-1", "worker-0/n3".
	Target string `json:"target,omitempty"`
	// Detail describes a fault's parameters.
	Detail string `json:"detail,omitempty"`
	// Err is the error of a failed or unknown operation.
	Err string `json:"err,omitempty"`
}

// NodeOutcome is one node's answer to one request.
type NodeOutcome struct {
	// Node is the node's index in the cluster.
	Node int `json:"node"`
	// Outcome is the library's Outcome name ("ok", "held", "timeout",
	// "error", "no answer", ...).
	Outcome string `json:"outcome"`
	// Micros is the node's latency in microseconds; 0 when it did not answer.
	Micros int64 `json:"us,omitempty"`
}

// HeldLock is one lock of a set taken together: the key held, with the
// token, fencing token and validity deadline of its own lock, as an
// acquisition of the one key records them.
type HeldLock struct {
	Key      string `json:"key"`
	Token    string `json:"token"`
	Fence    uint64 `json:"fence,omitempty"`
	Deadline int64  `json:"deadline,omitempty"`
}

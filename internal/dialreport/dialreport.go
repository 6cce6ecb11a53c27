// Package dialreport carries what an adapter's Dial found out about the
// nodes into the redlock.Client it returns (Client.UnreachableAtDial),
// without a setter in the public API: package redlock sets Attach when it
// is initialised, and internal/nodecheck calls it.
package dialreport

import (
	"context"
	"errors"
	"time"
)

// Down is a node that Dial could not reach.
type Down struct {
	Node    int           // its index in the Client's node list
	Err     error         // the error of its PING
	Latency time.Duration // time to that error
	// Identify, when not nil, finishes Dial's check of duplicates on the
	// node once it answers: the Client counts none of its votes until
	// Identify returns nil. It returns an error wrapping ErrNoAnswer while
	// the node does not answer, and one wrapping redlock.ErrDuplicateNode
	// when another entry of the node list reaches the same server. It is
	// nil for a list of one node.
	Identify func(ctx context.Context) error
}

// ErrNoAnswer is Identify's error while the node does not answer.
var ErrNoAnswer = errors.New("no answer")

// Report is what Dial found out about the nodes.
type Report struct {
	// Down are the nodes it could not reach.
	Down []Down
	// Unidentified are the nodes, by index, that answered but whose
	// server it could not identify (its user refused INFO), in a list of
	// several: listed again under another name, such a server would vote
	// twice.
	Unidentified []int
}

// Attach records on client, a *redlock.Client that no goroutine uses yet,
// that Dial checked the identities of the nodes it reached, and r. Package
// redlock sets it at initialisation, before any Dial can run.
var Attach func(client any, r Report)

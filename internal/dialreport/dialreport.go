// Package dialreport carries what an adapter's Dial found out about the
// nodes into the redlock.Client it returns (Client.UnreachableAtDial),
// without a setter in the public API: package redlock sets Attach when it
// is initialised, and internal/nodecheck calls it.
package dialreport

import "time"

// Down is a node that Dial could not reach.
type Down struct {
	Node    int           // its index in the Client's node list
	Err     error         // the error of its PING
	Latency time.Duration // time to that error
}

// Attach records down on client, a *redlock.Client that no goroutine uses
// yet. Package redlock sets it at initialisation, before any Dial can run.
var Attach func(client any, down []Down)

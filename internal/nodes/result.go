package nodes

import "time"

// Outcome is what one node answered to one request. The values are those
// of the root package's Outcome, which has one more (recovering).
type Outcome uint8

// The outcomes a fan-out reports.
const (
	NoAnswer Outcome = 0 // the fan-out was settled before the node answered
	OK       Outcome = 1 // the reply is the one the caller hoped for
	Held     Outcome = 2 // another reply
	Timeout  Outcome = 3 // no answer within the per-node timeout
	Error    Outcome = 4 // an error, or the node could not be reached
	NotAsked Outcome = 6 // the request was sent to no node
)

// Result is one node's part in a request.
type Result struct {
	Node    string        // the Conn's Name
	Outcome Outcome       // what it answered
	Err     error         // for Timeout and Error
	Latency time.Duration // time to its answer; zero for NoAnswer
}

package nodes

import "sync/atomic"

// gates hold nodes out of the fan-outs: while a node's gate holds an
// error, each call to it answers that error at once, unsent.
type gates []atomic.Pointer[error]

// Hold makes every call to node answer err without being sent, until Open;
// err must not be nil.
func (n *Set) Hold(node int, err error) { n.gates[node].Store(&err) }

// Open sends the calls to node again.
func (n *Set) Open(node int) { n.gates[node].Store(nil) }

// Held returns the error that node's calls answer while Hold keeps it out,
// and nil while it is open.
func (n *Set) Held(node int) error {
	if err := n.gates[node].Load(); err != nil {
		return *err
	}
	return nil
}

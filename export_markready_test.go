package redlock

import "github.com/redlock-go/redlock/internal/wire"

// What the tests of MarkReady read of the package's insides.

// MarkReadyScriptSource is the mark-ready script as sent, for tests that
// run it directly.
var MarkReadyScriptSource = wire.MarkReadyScript.Source

// SlotMarkerKey returns the restart marker's key of a Redis Cluster's hash
// slot.
func SlotMarkerKey(slot int) string {
	marker, _ := wire.SlotMarkerKeys(slot)
	return marker
}

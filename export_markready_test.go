package redlock

// What the tests of MarkReady read of the package's insides.

// MarkReadyScriptSource is the mark-ready script as sent, for tests that
// run it directly.
var MarkReadyScriptSource = markReadyScript.source

// SlotMarkerKey returns the restart marker's key of a Redis Cluster's hash
// slot.
func SlotMarkerKey(slot int) string {
	marker, _ := slotMarkerKeys(slot)
	return marker
}

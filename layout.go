package redlock

// layout names the keys the library keeps beside a lock key on the nodes
// (see keys.go). Over independent servers they are fixed names, and the
// key's name with a prefix. When a node is a Redis Cluster, a script may
// only touch keys of one hash slot, so every key kept for a lock key goes
// in the lock key's slot: its name carries, in braces, a tag of that slot
// (slotTag), and the restart marker and its process key exist once per
// slot ("redlock:marker:{tag}"), since a slot is what moves between a
// cluster's masters, by resharding or by a replica's promotion. The slot's
// new master is another process than the one that wrote the marker, so
// the quarantine holds the slot out for the recovery delay there, whether
// or not the master's last writes reached it (see quarantine.lua).
type layout struct {
	cluster bool
}

// tag returns "{t}" for a tag t of key's slot, or "" over independent
// servers.
func (l layout) tag(key string) string {
	if !l.cluster {
		return ""
	}
	return "{" + slotTag(keySlot(key)) + "}"
}

// fenceKey returns the name of key's fencing counter.
func (l layout) fenceKey(key string) string {
	return fencePrefix + l.tag(key) + key
}

// markerKeys returns the names of the restart marker and its process key
// that guard key.
func (l layout) markerKeys(key string) (marker, process string) {
	if !l.cluster {
		return markerKey, processKey
	}
	return slotMarkerKeys(keySlot(key))
}

// slotMarkerKeys returns the names of the restart marker and its process
// key of a Redis Cluster's slot.
func slotMarkerKeys(slot int) (marker, process string) {
	tag := "{" + slotTag(slot) + "}"
	return markerKey + ":" + tag, processKey + ":" + tag
}

// releaseChannel returns the name of the pub/sub channel on which releases
// of key are announced: "redlock:released:" + key over independent servers,
// and "redlock:released:{tag}" + key when a node is a Redis Cluster, so that
// the channel is a shard channel of the key's slot. A cluster node
// announces with SPUBLISH on it, which reaches the subscribers of the
// slot's shard only, where PUBLISH would reach every node of the cluster
// (see lua/sharded_release.lua); a Redis Cluster also refuses a script's
// SPUBLISH on a channel that another master serves.
func (l layout) releaseChannel(key string) string {
	return releaseChannelPrefix + l.tag(key) + key
}

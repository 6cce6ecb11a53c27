package redlock

import "github.com/redlock-go/redlock/internal/hashslot"

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = hashslot.Count

// keySlot returns the Redis Cluster hash slot of key (see hashslot.Of).
func keySlot(key string) int { return hashslot.Of(key) }

// slotTag returns a short string that hashes to slot: in braces, it puts a
// key in that slot whatever follows (see hashslot.Tag).
func slotTag(slot int) string { return hashslot.Tag(slot) }

package redlocktest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redlock-go/redlock/internal/hashslot"
)

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = hashslot.Count

// SlotRange is a range of Redis Cluster hash slots, First to Last inclusive.
type SlotRange struct {
	First, Last int
}

// Contains reports whether slot is in the range.
func (r SlotRange) Contains(slot int) bool {
	return r.First <= slot && slot <= r.Last
}

// String returns "first-last", or "slot" for a range of one slot, as
// CLUSTER NODES shows it.
func (r SlotRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(r.First)
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// KeySlot returns the Redis Cluster hash slot of key, as CLUSTER KEYSLOT
// does: CRC16 (XMODEM) of the key, or of its hash tag, modulo 16384. The
// hash tag is what lies between the first '{' and the first '}' after it,
// if that is not empty, so "{user1}.a" and "{user1}.b" share a slot.
func KeySlot(key string) int { return hashslot.Of(key) }

// splitSlots divides the slots evenly into n consecutive ranges (n <= 16384).
func splitSlots(n int) []SlotRange {
	ranges := make([]SlotRange, n)
	for i := range n {
		ranges[i] = SlotRange{First: i * SlotCount / n, Last: (i+1)*SlotCount/n - 1}
	}
	return ranges
}

// clusterNode is one line of a CLUSTER NODES reply.
type clusterNode struct {
	id     string
	addr   string // "ip:port", without the bus port and hostname
	flags  []string
	master string      // the ID of the master a replica replicates, "" for a master
	slots  []SlotRange // slots served; migrating and importing slots are left out
}

// isMaster reports whether the line is a master's.
func (cn clusterNode) isMaster() bool {
	return slices.Contains(cn.flags, "master")
}

// isMyself reports whether the line is the answering node's own.
func (cn clusterNode) isMyself() bool {
	return slices.Contains(cn.flags, "myself")
}

// servedBy returns the line of the master that serves slot in view, and
// whether there is one.
func servedBy(view []clusterNode, slot int) (clusterNode, bool) {
	for _, cn := range view {
		if cn.isMaster() && slices.ContainsFunc(cn.slots, func(r SlotRange) bool { return r.Contains(slot) }) {
			return cn, true
		}
	}
	return clusterNode{}, false
}

// parseClusterNodes parses a CLUSTER NODES reply.
func parseClusterNodes(reply string) ([]clusterNode, error) {
	var nodes []clusterNode
	for line := range strings.Lines(reply) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 8 {
			return nil, fmt.Errorf("malformed CLUSTER NODES line %q", line)
		}
		addr, _, _ := strings.Cut(fields[1], "@")
		n := clusterNode{id: fields[0], addr: addr, flags: strings.Split(fields[2], ",")}
		if fields[3] != "-" {
			n.master = fields[3]
		}
		for _, f := range fields[8:] {
			r, served, err := parseSlotRange(f)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES line %q: %w", line, err)
			}
			if served {
				n.slots = append(n.slots, r)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// parseSlotRange parses a slot field of CLUSTER NODES: "first-last" or
// "slot". A migrating or importing slot ("[slot->-id]") is not served:
// served is false and err nil.
func parseSlotRange(field string) (r SlotRange, served bool, err error) {
	if strings.HasPrefix(field, "[") {
		return SlotRange{}, false, nil
	}
	first, last, isRange := strings.Cut(field, "-")
	if !isRange {
		last = first
	}
	a, errA := strconv.Atoi(first)
	b, errB := strconv.Atoi(last)
	if errA != nil || errB != nil || a < 0 || a > b || b >= SlotCount {
		return SlotRange{}, false, fmt.Errorf("bad slot range %q", field)
	}
	return SlotRange{First: a, Last: b}, true, nil
}

package doctor

import (
	"strconv"
	"strings"

	"github.com/redlock-go/redlock/internal/hashslot"
)

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = hashslot.Count

// SlotRange is a range of Redis Cluster hash slots, First to Last inclusive.
type SlotRange struct {
	First, Last int
}

// Len returns the number of slots in the range.
func (r SlotRange) Len() int { return r.Last - r.First + 1 }

// String returns "first-last", or "slot" for a range of one slot, as
// CLUSTER NODES shows it.
func (r SlotRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(r.First)
	}
	return strconv.Itoa(r.First) + "-" + strconv.Itoa(r.Last)
}

// slotCountOf returns the number of slots in ranges.
func slotCountOf(ranges []SlotRange) int {
	n := 0
	for _, r := range ranges {
		n += r.Len()
	}
	return n
}

// maxRangesShown is how many slot ranges a message lists before it stops
// with "…": enough for a shard's own ranges, short enough for one line.
const maxRangesShown = 4

// rangesText lists ranges as "0-5460,10923-16383", cut after
// maxRangesShown ranges.
func rangesText(ranges []SlotRange) string {
	parts := make([]string, 0, min(len(ranges), maxRangesShown)+1)
	for i, r := range ranges {
		if i == maxRangesShown {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ",")
}

// slotSet collects slots, added in increasing order, as ranges.
type slotSet []SlotRange

// add adds slot, which must be above every slot added before.
func (s *slotSet) add(slot int) {
	if n := len(*s); n > 0 && (*s)[n-1].Last == slot-1 {
		(*s)[n-1].Last = slot
		return
	}
	*s = append(*s, SlotRange{slot, slot})
}

// uncoveredSlots returns the slots in none of served, in order.
func uncoveredSlots(served [][]SlotRange) []SlotRange {
	var covered [slotCount]bool
	for _, ranges := range served {
		for _, r := range ranges {
			for slot := max(r.First, 0); slot <= min(r.Last, slotCount-1); slot++ {
				covered[slot] = true
			}
		}
	}
	var out slotSet
	for slot, ok := range covered {
		if !ok {
			out.add(slot)
		}
	}
	return out
}

// The restart marker of a Redis Cluster slot and its process key are
// these prefixes followed by "{tag}", tag the library's string of that
// slot (hashslot.Tag): the names the library gives them (slotMarkerKeys in
// its layout.go).
const (
	slotMarkerPrefix  = "redlock:marker:"
	slotProcessPrefix = "redlock:process:"
)

// slotMarkerKeys returns the names of the restart marker and its process
// key of slot.
func slotMarkerKeys(slot int) (marker, process string) {
	tag := "{" + hashslot.Tag(slot) + "}"
	return slotMarkerPrefix + tag, slotProcessPrefix + tag
}

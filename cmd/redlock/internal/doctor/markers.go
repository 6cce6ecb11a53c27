package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Markers sorts the slots of one Redis Cluster master by the state of
// their restart markers. Over a Redis Cluster the library keeps a restart
// marker per slot ("redlock:marker:{tag}", beside "redlock:process:{tag}"),
// since a slot is what moves between masters: a slot sits out the
// acquisitions of its locks on its own, as a whole server does elsewhere.
// Slots in none of the lists are ready.
type Markers struct {
	// Ready is how many slots are ready to vote: marked ready, or marked
	// longer ago than the recovery delay, by the master that serves them.
	Ready int
	// Unmarked are the slots without a marker: the master lost them
	// (restarted empty), or no lock of theirs was ever taken there. Each
	// sits out the recovery delay from its next acquisition.
	Unmarked []SlotRange
	// Restarted are the slots whose marker another Redis process wrote:
	// the master restarted or was promoted since. Each sits out the
	// recovery delay from its next acquisition.
	Restarted []SlotRange
	// Recovering are the slots marked less than the recovery delay ago.
	Recovering []SlotRange
	// RecoveringLeft is how long the slot of Recovering that stays out
	// longest has left, by the master's clock.
	RecoveringLeft time.Duration
	// Unreadable are the slots whose marker could not be read: a refusal,
	// no answer, the slot moved to another master, or a value this library
	// did not write.
	Unreadable []SlotRange
	// Err is why the first of Unreadable could not be read.
	Err error
}

// sittingOut reports whether any slot is kept out of the quorums by the
// restart quarantine, or will be from its next acquisition.
func (m *Markers) sittingOut() bool {
	return len(m.Unmarked)+len(m.Restarted)+len(m.Recovering) > 0
}

// markerBatch is how many slots' markers one pipeline reads: one round trip
// per batch keeps the audit of a master's thousands of slots to a few
// round trips, and a batch's replies (a few tens of kilobytes) within one
// socket read timeout.
const markerBatch = 1024

// markerJudge decides the state of one slot's marker, as the library's
// inspect script does (quarantine.lua).
type markerJudge struct {
	// runID is the master's run_id, "" when unknown: a marker's writer is
	// then not compared.
	runID string
	// offset is the master's clock minus this host's.
	offset time.Duration
	// delay is the recovery delay.
	delay time.Duration
}

// readMarkers reads the restart markers of slots, which master serves,
// batch by batch, and sorts them. It stops reading when ctx ends; the
// slots left are Unreadable.
func readMarkers(ctx context.Context, master *redis.Client, slots []SlotRange, judge markerJudge) Markers {
	var all []int
	for _, r := range slots {
		for slot := r.First; slot <= r.Last; slot++ {
			all = append(all, slot)
		}
	}
	var m Markers
	var sets markerSets
	for len(all) > 0 {
		batch := all[:min(markerBatch, len(all))]
		all = all[len(batch):]
		pipe := master.Pipeline()
		cmds := make([]*redis.SliceCmd, len(batch))
		for i, slot := range batch {
			marker, process := slotMarkerKeys(slot)
			cmds[i] = pipe.MGet(ctx, marker, process)
		}
		_, _ = pipe.Exec(ctx) // each command's error is its slot's
		now := time.Now().Add(judge.offset)
		for i, slot := range batch {
			vals, err := cmds[i].Result()
			if err == nil {
				err = judge.sort(&m, &sets, slot, vals, now)
			}
			if err != nil {
				sets.unreadable.add(slot)
				if m.Err == nil {
					m.Err = err
				}
			}
		}
	}
	m.Unmarked, m.Restarted, m.Recovering, m.Unreadable = sets.unmarked, sets.restarted, sets.recovering, sets.unreadable
	return m
}

// markerSets collects the slots of each state while readMarkers reads them.
type markerSets struct {
	unmarked, restarted, recovering, unreadable slotSet
}

// sort files slot under its state, from vals, the values of its marker and
// process key, and now, the master's clock. It returns an error for a
// marker that is not a time in microseconds.
func (j markerJudge) sort(m *Markers, sets *markerSets, slot int, vals []any, now time.Time) error {
	if len(vals) != 2 {
		return fmt.Errorf("unexpected MGET reply %v", vals)
	}
	marker, hasMarker := vals[0].(string)
	writer, hasWriter := vals[1].(string)
	if !hasMarker {
		sets.unmarked.add(slot)
		return nil
	}
	since, err := strconv.ParseInt(marker, 10, 64)
	if err != nil {
		name, _ := slotMarkerKeys(slot)
		return fmt.Errorf("%s holds %q, not a time in microseconds", name, marker)
	}
	if hasWriter && j.runID != "" && writerRunID(writer) != j.runID {
		sets.restarted.add(slot)
		return nil
	}
	if left := time.Duration(since)*time.Microsecond + j.delay - time.Duration(now.UnixMicro())*time.Microsecond; left > 0 {
		sets.recovering.add(slot)
		m.RecoveringLeft = max(m.RecoveringLeft, left)
		return nil
	}
	m.Ready++
	return nil
}

// writerRunID returns the run_id in a process key's value: its leading hex
// digits (a restart appends " restart").
func writerRunID(writer string) string {
	end := strings.IndexFunc(writer, func(r rune) bool {
		return !strings.ContainsRune("0123456789abcdefABCDEF", r)
	})
	if end < 0 {
		return writer
	}
	return writer[:end]
}

package redlock

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/wire"
)

// A waiter's place in a key's queue, and the key's waiting mark, last
// wire.QueueLasts after its last refused attempt (and the mark a second
// more). A waiter for a mutex, or a reader, that listens for releases and
// whose retry strategy pauses longer than that renews them during the
// pause, every keepPlaceEvery, without trying for the key
// (lua/keep_place.lua): it keeps its place in line, the key's releases
// still name it and wake it, whatever its retry delay, and every attempt
// is one its strategy asked for. A release that names it also names the
// next in line, and the nodes give a free mutex to any waiter's attempt
// after its first, so that a waiter that sleeps through a lost wake-up
// keeps the key from nobody. Not so the waiters for a set of keys or for
// a permit, for whom the nodes keep a free key: they renew only the keys'
// waiting marks, so that the releases they listen for are still announced,
// and their places lapse with their retry pauses.

// keepPlaceEvery is how often a listening waiter renews its places during
// a long pause: well within wire.QueueLasts, so that a slow round trip
// does not let them lapse.
const keepPlaceEvery = wire.QueueLasts / 2

// waitKeepingPlace is s.wait(pause); a pause longer than keepPlaceEvery it
// waits in spells of keepPlaceEvery, and renews the call's places between
// them (shape.keepPlace), until a release or the context ends the wait, or
// the pause does.
func waitKeepingPlace[T any](s shape[T], pause time.Duration) (live, named bool) {
	end := time.Now().Add(pause)
	for {
		spell := time.Until(end)
		if spell <= keepPlaceEvery {
			return s.wait(spell)
		}
		start := time.Now()
		if live, named = s.wait(keepPlaceEvery); !live || named || time.Since(start) < keepPlaceEvery {
			return live, named // the context ended, or a release woke it
		}
		s.keepPlace()
	}
}

// keepPlaces renews, on every node, the places in the queues of keys of
// this client's call that began waiting at since (in microseconds on its
// clock), under entry (its id, or its readers' entry), and the keys'
// waiting marks. It returns once every node
// answered, or at the node timeout.
func (c *Client) keepPlaces(ctx context.Context, entry string, keys []string, since string) {
	forEach(len(keys), func(i int) {
		_, clock, queue, deadlines, waiting := wire.ReleaseStrings(keys[i], time.Now(), c.keys.Tag(keys[i]))
		req := &nodes.Request{Script: wire.KeepPlaceScript, Keys: []string{queue, deadlines, waiting},
			Args: []string{entry, since, clock, c.wire.queueLasts}}
		c.fanout(ctx, c.requestTimeout(), req, isPlace, c.everyNode)
	})
}

// keepMarks renews, on every node, the waiting marks of keys, for readers,
// which wait for a key without a place in its queue, and for the waiters
// for a set or a permit, whose places lapse. It returns once every
// node answered, or at the node timeout.
func (c *Client) keepMarks(ctx context.Context, keys []string) {
	forEach(len(keys), func(i int) {
		req := &nodes.Request{Script: wire.ListenScript, Keys: []string{c.keys.WaitingKey(keys[i])}, Args: []string{c.wire.queueLastsMillis}}
		c.fanout(ctx, c.requestTimeout(), req, nodes.IsOne, c.everyNode)
	})
}

// everyNode is a fan-out's end once every node answered or timed out.
func (c *Client) everyNode(ok, others int) bool { return ok+others >= len(c.conns) }

// isPlace reports whether v is a place in a queue, as lua/keep_place.lua
// returns it.
func isPlace(v any) bool { _, ok := v.(int64); return ok }

package cli

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redlock-go/redlock"
)

// holding is what a command holds once it took its keys: the
// *redlock.Lock of one key, or the *redlock.Locks of several taken
// together, which end, are renewed and are released as one.
type holding interface {
	// Until is the validity deadline; of a set, the earliest of its locks.
	Until() time.Time
	// Done is closed once the lock, or any lock of the set, stops being
	// held; Err then says why.
	Done() <-chan struct{}
	Err() error
	Release(ctx context.Context) error
}

// quoteKeys renders keys for messages: each quoted, separated by commas.
func quoteKeys(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = strconv.Quote(k)
	}
	return strings.Join(quoted, ", ")
}

// shown renders a key for a table or a line of output: as it is when it
// is UTF-8 made of printable characters other than spaces, else quoted, so
// that a key with a newline, a tab, a terminal escape or bytes that are no
// UTF-8 (0x9b alone starts an escape on some terminals) cannot forge a row
// or drive the terminal.
func shown(k string) string {
	if !utf8.ValidString(k) {
		return strconv.Quote(k)
	}
	for _, r := range k {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// heldName names what h holds, for messages: `lock "KEY"` (a permit's key
// for a permit), or `locks "K1", "K2"` in the order keys lists them.
func heldName(keys []string, h holding) string {
	if lock, ok := h.(*redlock.Lock); ok {
		return "lock " + strconv.Quote(lock.Key())
	}
	return "locks " + quoteKeys(keys)
}

// locksOf returns the locks h holds, one per key, in the order keys lists
// them.
func locksOf(keys []string, h holding) []*redlock.Lock {
	switch h := h.(type) {
	case *redlock.Lock:
		return []*redlock.Lock{h}
	case *redlock.Locks:
		byKey := map[string]*redlock.Lock{}
		for _, l := range h.Locks() {
			byKey[l.Key()] = l
		}
		locks := make([]*redlock.Lock, len(keys))
		for i, k := range keys {
			locks[i] = byKey[k]
		}
		return locks
	}
	return nil
}

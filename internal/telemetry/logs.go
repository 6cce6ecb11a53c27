package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// logEvery bounds how often a record that can come once per call under an
// outage is logged (a release that did not reach a quorum, a background
// release finished or given up): once per logEvery at most, the next one
// saying how many were left out. Ten seconds show an outage's start at
// once, and keep a long one to a few lines a minute.
const logEvery = 10 * time.Second

// limiter lets one record through per logEvery, and counts the others.
type limiter struct {
	mu      sync.Mutex
	next    time.Time // no record before then
	skipped int       // records left out since the last
}

// allow reports whether a record may be logged now and, when it may, how
// many were left out before it.
func (l *limiter) allow() (ok bool, skipped int) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.skipped++
		return false, 0
	}
	l.next = now.Add(logEvery)
	skipped, l.skipped = l.skipped, 0
	return true, skipped
}

// LockEnded records the end of a lock of key held for heldFor: released;
// lost for reason with err, which is logged as a warning, since its holder
// had to stop; or expired with err, the end its TTL set, logged at Debug
// only, as a release is not logged at all.
func (t *Telemetry) LockEnded(key string, heldFor time.Duration, end End, reason Reason, err error) {
	if t.metrics != nil {
		t.metrics.lockEnded(heldFor, end, reason)
	}
	if t.log == nil {
		return
	}
	switch end {
	case EndLost:
		t.log.LogAttrs(context.Background(), slog.LevelWarn, "redlock: lock lost", slog.String("key", key),
			slog.String("reason", reason.String()), slog.Duration("held_for", heldFor), slog.String("error", err.Error()))
	case EndExpired:
		t.log.LogAttrs(context.Background(), slog.LevelDebug, "redlock: lock expired", slog.String("key", key),
			slog.Duration("held_for", heldFor), slog.String("error", err.Error()))
	}
}

// releaseFailed logs a release of key that did not reach a quorum, with
// each node's answer.
func (t *Telemetry) releaseFailed(ctx context.Context, key string, answers []Answer) {
	if t.log == nil {
		return
	}
	ok, skipped := t.releaseLimit.allow()
	if !ok {
		return
	}
	attrs := []slog.Attr{slog.String("key", key), slog.String("nodes", describeRelease(answers))}
	if skipped > 0 {
		attrs = append(attrs, slog.Int("more_since_last", skipped))
	}
	t.log.LogAttrs(ctx, slog.LevelWarn, "redlock: release did not reach a quorum; the lock stands until its TTL passes", attrs...)
}

// BackgroundRelease logs the end of a release of key sent again in the
// background to nodes that had missed it: finished after tries tries, or
// given up with the nodes in missing still holding the key until its TTL
// passes.
func (t *Telemetry) BackgroundRelease(key string, tries int, missing []string) {
	if t.log == nil {
		return
	}
	ok, skipped := t.backgroundLimit.allow()
	if !ok {
		return
	}
	attrs := []slog.Attr{slog.String("key", key), slog.Int("tries", tries)}
	if skipped > 0 {
		attrs = append(attrs, slog.Int("more_since_last", skipped))
	}
	if len(missing) == 0 {
		t.log.LogAttrs(context.Background(), slog.LevelInfo, "redlock: background release finished", attrs...)
		return
	}
	attrs = append(attrs, slog.String("nodes", strings.Join(missing, ", ")))
	t.log.LogAttrs(context.Background(), slog.LevelWarn, "redlock: background release given up; the key stays on these nodes until its TTL passes", attrs...)
}

// describeRelease lists each node's answer to a release: "a ok; b
// timeout; c error: …; d not held by this token", the last for a node that
// refused it, as it does not hold the lock with the release's token.
func describeRelease(answers []Answer) string {
	var b strings.Builder
	for i, a := range answers {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(a.Node)
		b.WriteByte(' ')
		if a.Outcome == Held {
			b.WriteString("not held by this token")
			continue
		}
		b.WriteString(a.Outcome.String())
		if a.Err != nil {
			b.WriteString(": ")
			b.WriteString(a.Err.Error())
		}
	}
	return b.String()
}

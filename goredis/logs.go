package goredis

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// SetLogger sends go-redis's own log lines, such as one for each failed
// dial to a node that is down, to l as Warn records whose message is the
// line; a nil l drops them. go-redis writes them through one logger for
// the whole process (redis.SetLogger), by default to standard error, so
// SetLogger affects every go-redis client of the program, this package's
// or not: call it once, at start-up or in a test's TestMain, before any
// client is made. A test that kills nodes on purpose silences them with
// goredis.SetLogger(nil), without importing go-redis. The library's own
// records go to redlock.Options.Logger, whatever SetLogger is given.
func SetLogger(l *slog.Logger) {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	redis.SetLogger(slogLogger{l})
}

// slogLogger adapts a *slog.Logger to go-redis's logger interface.
type slogLogger struct{ l *slog.Logger }

// Printf logs one go-redis line as a Warn record.
func (s slogLogger) Printf(ctx context.Context, format string, v ...any) {
	s.l.WarnContext(ctx, fmt.Sprintf(format, v...))
}

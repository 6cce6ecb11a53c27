package observe

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// LogLevels lists the values --log-level accepts, quietest last.
var LogLevels = []string{"debug", "info", "warn", "error", "off"}

// NewLogger returns a logger that writes the library's records at level or
// above to w, one line each, as slog's text handler formats them, or with
// asJSON its JSON handler; "off" returns a logger that writes nothing.
func NewLogger(w io.Writer, level string, asJSON bool) (*slog.Logger, error) {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "warn", "warning":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	case "off", "none":
		return slog.New(slog.DiscardHandler), nil
	default:
		return nil, fmt.Errorf("--log-level %q is not one of %s", level, strings.Join(LogLevels, ", "))
	}
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: DurationText})), nil
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// DurationText is a ReplaceAttr of JSON logs that writes a duration as the
// text logs do, "2.5s", not as a bare number of nanoseconds.
func DurationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

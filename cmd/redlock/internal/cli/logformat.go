package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/redlock-go/redlock/cmd/redlock/internal/observe"
)

// logFormat is --log-format: how a command writes on stderr its own
// messages and the library's log records. With text, its default, each
// message is a line "redlock CMD: MSG" and each record a line of slog's
// text handler; with json, each is one JSON object a line, as slog's JSON
// handler writes them: {"time", "level", "msg", "cmd", ...}, durations as
// text ("2.5s").
type logFormat string

const (
	logText logFormat = "text"
	logJSON logFormat = "json"
)

func (f *logFormat) String() string {
	if f == nil || *f == "" {
		return string(logText)
	}
	return string(*f)
}

func (f *logFormat) Set(s string) error {
	switch logFormat(s) {
	case logText, logJSON:
		*f = logFormat(s)
		return nil
	}
	return fmt.Errorf("want text or json")
}

// logFormatUsage describes --log-format.
const logFormatUsage = "write redlock's messages and the library's log records on stderr in `FORMAT`: " +
	"text, a line each, or json, one JSON object a line with time, level, msg and cmd; " +
	"the output of the command 'redlock run' runs is its own"

// wantsJSONLog reports whether the command line asks for --log-format
// json, for errors found while its flags are parsed.
func wantsJSONLog(args []string) bool {
	for i, a := range args {
		switch a {
		case "--":
			return false
		case "-log-format=json", "--log-format=json":
			return true
		case "-log-format", "--log-format":
			if i+1 < len(args) && args[i+1] == string(logJSON) {
				return true
			}
		}
	}
	return false
}

// jsonLog is a command's stderr with --log-format json. The command's own
// messages become records through say, usageError and printFailure, each
// at its level; anything else written to it, a line at a time, becomes a
// record at level WARN, without its "redlock CMD: " prefix. Records are
// written whole, one at a time, to the stderr it wraps, which the
// library's records share.
type jsonLog struct {
	out *lockedWriter
	cmd string
	log *slog.Logger // every level, with the attribute cmd

	mu      sync.Mutex
	partial []byte // the start of a line written without its end yet
}

// newJSONLog returns the JSON log of the command cmd on w.
func newJSONLog(w io.Writer, cmd string) *jsonLog {
	out := &lockedWriter{w: w}
	h := slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: observe.DurationText})
	return &jsonLog{out: out, cmd: cmd, log: slog.New(h).With("cmd", cmd)}
}

// record writes one record of the command.
func (l *jsonLog) record(level slog.Level, msg string, attrs ...slog.Attr) {
	l.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// Write makes a record of each line of p, completing the line an earlier
// write left unfinished.
func (l *jsonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

// line makes a record of one line written to the log.
func (l *jsonLog) line(s string) {
	if s = strings.TrimPrefix(s, "redlock "+l.cmd+": "); strings.TrimSpace(s) != "" {
		l.record(slog.LevelWarn, s)
	}
}

// flush makes a record of a line left unfinished.
func (l *jsonLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = nil
	}
}

// lockedWriter writes to w one Write at a time: the command's records and
// the library's, written from other goroutines, do not interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// say writes a message of the command cmd on w at level: the line
// "redlock CMD: MSG" (a line each for a message of several), or a record
// of a JSON log.
func say(w io.Writer, level slog.Level, cmd, msg string) {
	if l, ok := w.(*jsonLog); ok {
		l.record(level, msg)
		return
	}
	for line := range strings.SplitSeq(msg, "\n") { // errors joined, one a line
		fmt.Fprintf(w, "redlock %s: %s\n", cmd, line)
	}
}

// sayf is say with a message formatted as fmt.Sprintf does.
func sayf(w io.Writer, level slog.Level, cmd, format string, args ...any) {
	say(w, level, cmd, fmt.Sprintf(format, args...))
}

// logTo returns s writing its messages as --log-format json says when
// asJSON is set, for the command cmd, and a function that ends the log;
// s unchanged otherwise. The command 'redlock run' runs keeps the stderr
// s had.
func logTo(s streams, cmd string, asJSON bool) (streams, func()) {
	if !asJSON {
		return s, func() {}
	}
	l := newJSONLog(s.stderr, cmd)
	s.cmdStderr, s.stderr = s.stderr, l
	return s, l.flush
}

// libraryLog returns where the library's records go, given the command's
// stderr, and whether they are JSON: a JSON log's stderr, else stderr.
func libraryLog(stderr io.Writer) (io.Writer, bool) {
	if l, ok := stderr.(*jsonLog); ok {
		return l.out, true
	}
	return stderr, false
}

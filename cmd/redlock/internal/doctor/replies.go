package doctor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseInfo splits an INFO reply into its fields.
func parseInfo(info string) map[string]string {
	f := map[string]string{}
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	return f
}

// parseTime decodes a TIME reply: seconds and microseconds.
func parseTime(v any) (time.Time, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return time.Time{}, fmt.Errorf("unexpected TIME reply %v", v)
	}
	sec, err1 := strconv.ParseInt(replyString(a[0]), 10, 64)
	usec, err2 := strconv.ParseInt(replyString(a[1]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return time.Time{}, fmt.Errorf("unexpected TIME reply %v: %w", v, err)
	}
	return time.Unix(sec, usec*int64(time.Microsecond)), nil
}

// configValue finds name's value in a CONFIG GET reply, which is a flat
// array under RESP2 and a map under RESP3.
func configValue(v any, name string) (string, bool) {
	switch r := v.(type) {
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if replyString(r[i]) == name {
				return replyString(r[i+1]), true
			}
		}
	case map[string]any:
		if val, ok := r[name]; ok {
			return replyString(val), true
		}
	case map[any]any:
		if val, ok := r[name]; ok {
			return replyString(val), true
		}
	}
	return "", false
}

// replyString renders a reply element as a string.
func replyString(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case []byte:
		return string(s)
	default:
		return fmt.Sprint(s)
	}
}

// versionBelow reports whether version (such as "7.0.15") is known to be
// older than major.minor.patch.
func versionBelow(version string, want ...int) bool {
	parts := strings.Split(version, ".")
	for i, w := range want {
		if i >= len(parts) {
			return false
		}
		got, err := strconv.Atoi(parts[i])
		if err != nil || got != w {
			return err == nil && got < w
		}
	}
	return false
}

// errText is err's text on one line, as error replies can end in spaces
// or carry newlines.
func errText(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// refusedCommand is the command an ACL refusal names ("… no permissions to
// run the 'time' command"), or "" when err names none.
func refusedCommand(err error) string {
	const before, after = "to run the '", "' command"
	text := err.Error()
	i := strings.Index(text, before)
	if i < 0 {
		return ""
	}
	rest := text[i+len(before):]
	j := strings.Index(rest, after)
	if j <= 0 {
		return ""
	}
	return rest[:j]
}

// shortErrText is errText cut where the server starts quoting the
// command's arguments ("with args beginning with: …"), which for FUNCTION
// LOAD are the library's source.
func shortErrText(err error) string {
	text, _, _ := strings.Cut(errText(err), ", with args beginning with")
	return text
}

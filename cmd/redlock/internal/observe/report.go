package observe

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// reportEvery is how often a failing exporter is said to fail: once at
// once, so that a wrong endpoint shows at the first export, then at most
// this often while it keeps failing, so that a collector that is down does
// not fill the log of a long 'redlock run'.
const reportEvery = time.Minute

// reporter says on a writer, in the command's own words, that an exporter
// failed: OpenTelemetry hands it the errors of exports made in the
// background, and Shutdown those of the last exports.
type reporter struct {
	w      io.Writer
	prefix string // "redlock COMMAND"

	mu   sync.Mutex
	said map[string]time.Time // when each kind of failure was last said
}

// Handle says err, unless a failure of the same kind was said less than
// reportEvery ago. The kind is err's text up to its first colon, which
// the exporters make name what failed ("traces export", ...).
func (r *reporter) Handle(err error) {
	if r == nil || err == nil {
		return
	}
	msg := err.Error()
	kind, _, _ := strings.Cut(msg, ":")
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.said[kind]; ok && time.Since(at) < reportEvery {
		return
	}
	r.said[kind] = time.Now()
	fmt.Fprintf(r.w, "%s: telemetry not exported: %s\n", r.prefix, msg)
}

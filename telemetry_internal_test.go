package redlock

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/telemetry"
)

// Each node outcome keeps its name in the telemetry, spelled as an
// attribute value.
func TestTelemetry_outcomeNames(t *testing.T) {
	for o := OutcomeNoAnswer; o <= OutcomeNotAsked; o++ {
		want := strings.ReplaceAll(o.String(), " ", "_")
		if got := telemetryOutcomes[o].String(); got != want {
			t.Errorf("outcome %q is %q in the telemetry", o, got)
		}
	}
}

// A lock whose end its holder learns late (its process paused past the
// deadline) was held until its validity deadline, not until the holder
// ran again: the log's held_for says so.
func TestTelemetry_heldForEndsAtTheDeadline(t *testing.T) {
	logs := &strings.Builder{}
	c := &Client{opts: Options{}}
	c.tel = telemetry.New(telemetry.Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	granted := time.Now().Add(-10 * time.Second)
	l := &Lock{client: c, key: "paused", granted: &granted, until: granted.Add(3 * time.Second)}
	l.observeEnd(fmt.Errorf("%w: validity ended", ErrLockLost))
	if !strings.Contains(logs.String(), "held_for=3s") {
		t.Errorf("lost lock's record: %s; want held_for=3s, its validity", logs)
	}
}

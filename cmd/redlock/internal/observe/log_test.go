package observe

import (
	"strings"
	"testing"
	"time"
)

// A JSON log writes durations as the text log does, not as nanoseconds.
func TestNewLogger_jsonDurationsAreText(t *testing.T) {
	var out strings.Builder
	log, err := NewLogger(&out, "info", true)
	if err != nil {
		t.Fatal(err)
	}
	log.Warn("redlock: lock lost", "held_for", 2778403086*time.Nanosecond)
	if !strings.Contains(out.String(), `"held_for":"2.778403086s"`) {
		t.Errorf("JSON record: %s; want held_for as \"2.778403086s\"", out.String())
	}
}

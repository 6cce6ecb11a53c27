package redlock

import (
	"strings"
	"testing"
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

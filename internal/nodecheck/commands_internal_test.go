package nodecheck

import (
	"strings"
	"testing"
)

// Every command the scripts run is checked with its arguments: one without
// them crashes Redis 7.0's acl_check_cmd under a user with key patterns.
func TestCommandCalls_everyCommandHasItsArguments(t *testing.T) {
	calls, unchecked := commandCalls()
	if len(unchecked) > 0 {
		t.Errorf("no arguments in commandArgs for %v", unchecked)
	}
	for _, call := range calls {
		if f := strings.Fields(call); f[0] != "TIME" && (len(f) < 2 || f[1] != probeKey) {
			t.Errorf("%q: want the command on %s", call, probeKey)
		}
	}
}

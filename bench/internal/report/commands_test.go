package report

import "testing"

func TestCommandList(t *testing.T) {
	perCycle := map[string]float64{"get": 4, "evalsha": 2, "fcall": 1, "del": 1, "ping": 0.001}
	if got, want := commandList(perCycle), "4.00 GET, 2.00 EVALSHA, 1.00 DEL, 1.00 FCALL"; got != want {
		t.Errorf("commandList = %q, want %q", got, want)
	}
	total, scripts := commandTotals(perCycle)
	if total != 8.001 || scripts != 3 {
		t.Errorf("commandTotals = %v, %v; want 8.001, 3", total, scripts)
	}
}

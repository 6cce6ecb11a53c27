package traffic

import "testing"

// The goroutines of one worker process each number their operations from 1:
// their events keep their own process names, or they would collide.
func TestProcessName_keepsEachGoroutineApart(t *testing.T) {
	for _, tc := range []struct{ recorded, want string }{
		{"worker-1", "worker-1"},
		{"worker-1.0", "worker-1.0"},
		{"worker-1.12", "worker-1.12"},
		{"", "worker-1"},
		{"worker-2.0", "worker-1"}, // another worker's name is not trusted
		{"worker-10", "worker-1"},  // a prefix is not the name
		{"register", "worker-1"},
	} {
		if got := processName(tc.recorded, "worker-1"); got != tc.want {
			t.Errorf("processName(%q, worker-1) = %q, want %q", tc.recorded, got, tc.want)
		}
	}
	w := &Worker{name: "worker-1"}
	for process, want := range map[string]bool{"worker-1": true, "worker-1.3": true, "worker-10": false, "worker-2.1": false} {
		if got := w.IsOf(process); got != want {
			t.Errorf("IsOf(%q) = %v, want %v", process, got, want)
		}
	}
}

package report

import (
	"slices"
	"testing"
)

// TestNiceTicks_spanTheValues checks that the y axis of a growth chart
// starts at the 1-2-5 value just under the smallest value and ends at the
// one just over the largest.
func TestNiceTicks_spanTheValues(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{
		{24.9, 549, []float64{20, 50, 100, 200, 500, 1000}},
		{95, 935, []float64{50, 100, 200, 500, 1000}},
		{1, 10, []float64{1, 2, 5, 10}},
		{3, 4, []float64{2, 5}},
		{100, 100, []float64{100}},
	} {
		if got := niceTicks(c.lo, c.hi); !slices.Equal(got, c.want) {
			t.Errorf("niceTicks(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

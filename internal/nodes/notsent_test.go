package nodes

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// NotSent tells the errors of calls that never left from those of calls
// that may have reached their node.
func TestNotSent(t *testing.T) {
	for _, err := range []error{errBacklog, errPipeClosed, errStillLagging,
		fmt.Errorf("%w: %w", context.DeadlineExceeded, errWaitedPastTimeout), fmt.Errorf("node a: %w", errBacklog)} {
		if !NotSent(err) {
			t.Errorf("NotSent(%v) = false", err)
		}
	}
	for _, err := range []error{nil, context.DeadlineExceeded, errors.New("connection refused")} {
		if NotSent(err) {
			t.Errorf("NotSent(%v) = true", err)
		}
	}
}

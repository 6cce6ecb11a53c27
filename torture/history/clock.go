package history

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now returns CLOCK_MONOTONIC in nanoseconds. The clock is shared by every
// process on the host and never jumps, so values taken in different
// processes can be compared directly.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC exists on every Linux; failing to read it means
		// timestamps would be meaningless, and the history with them.
		panic("history: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// At converts a time.Time carrying a monotonic reading, such as a lock's
// validity deadline, to the shared monotonic clock of Now. It is exact to a
// few microseconds: the time between the two clock reads it makes.
func At(t time.Time) int64 {
	return Now() + int64(time.Until(t))
}

//go:build !linux

package delayproxy

import "time"

// preciseSleep is time.Sleep where no finer sleep is implemented.
func preciseSleep(d time.Duration) { time.Sleep(d) }

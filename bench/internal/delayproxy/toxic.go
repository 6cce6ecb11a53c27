package delayproxy

import (
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// delayToxicType names delayToxic among toxiproxy's toxics.
const delayToxicType = "delay_us"

// delayBuffer is how many chunks may wait in a delay at once, as for
// toxiproxy's own latency toxic.
const delayBuffer = 1024

// preciseBelow is the delay under which a delay sleeps in the kernel (see
// preciseSleep) rather than on the Go runtime's timers. The runtime's timers
// wake an idle process about a millisecond late, which is noise beside a
// slow node's 20 ms but twice a LAN's quarter of a millisecond; a precise
// sleep holds a thread while it waits, one per connection and direction.
const preciseBelow = 2 * time.Millisecond

// delayToxic passes every chunk on Micros microseconds after it reached the
// proxy. Toxiproxy's own latency toxic counts whole milliseconds and waits
// on the runtime's timers; a LAN's delay needs finer units and a finer
// clock.
type delayToxic struct {
	Micros int64 `json:"micros"`
}

// GetBufferSize implements toxics.BufferedToxic.
func (t *delayToxic) GetBufferSize() int { return delayBuffer }

// Pipe implements toxics.Toxic.
func (t *delayToxic) Pipe(stub *toxics.ToxicStub) {
	delay := time.Duration(t.Micros) * time.Microsecond
	wait := timerSleep
	if delay < preciseBelow {
		wait = preciseSleep
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			wait(time.Until(c.Timestamp.Add(delay)))
			select {
			case stub.Output <- c:
			case <-stub.Interrupt:
				stub.Output <- c // drop no data
				return
			}
		}
	}
}

// timerSleep sleeps on the Go runtime's timers.
func timerSleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

func init() {
	toxics.Register(delayToxicType, new(delayToxic))
}

package delayproxy

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/bench/internal/nodes"
)

// Calibration settings. calibrationPings PINGs, sent one after another,
// measure a round trip through a proxy (their median): enough for a
// median stable to a few microseconds, few enough to take under half a
// second through a LAN's delay. calibrationSteps is how many times the
// proxy's own cost is measured and taken off; the second step corrects
// the first by a few microseconds.
const (
	calibrationPings = 500
	calibrationSteps = 2
)

// Calibration is what StartCalibrated measured: the median PING round trip
// to the first node directly and through its proxy, after the last step.
type Calibration struct {
	Direct, Proxied time.Duration
	// Overhead is what the proxy itself was found to add to each chunk
	// (waking its goroutines, the sleep's lateness), taken off the delay
	// the proxy waits.
	Overhead time.Duration
}

// StartCalibrated starts the proxies of spec, then measures how much longer
// than a direct one a PING through the first proxy takes, and restarts them
// with what the proxy's own hops add taken off the delay, so that a request
// and its reply take about Delay longer each way (each way delayed) than on
// loopback, as over a network. The proxy's own cost under load differs
// from its cost while idle, when this measures it: the caller should
// sample the round trip through the proxy while it measures, too.
func StartCalibrated(ctx context.Context, spec Spec) (*Proxy, Calibration, error) {
	var cal Calibration
	direct, err := nodes.RoundTrip(ctx, spec.Upstreams[0], calibrationPings)
	if err != nil {
		return nil, cal, fmt.Errorf("%w: calibrate: %w", ErrStart, err)
	}
	cal.Direct = direct
	ways := time.Duration(1)
	if spec.BothWays {
		ways = 2
	}
	spec.Overhead = 0
	for step := 0; ; step++ {
		p, err := Start(ctx, spec)
		if err != nil {
			return nil, cal, err
		}
		proxied, err := nodes.RoundTrip(ctx, p.Addrs()[0], calibrationPings)
		if err != nil {
			p.Close()
			return nil, cal, fmt.Errorf("%w: calibrate: %w", ErrStart, err)
		}
		cal.Proxied, cal.Overhead = proxied, spec.Overhead
		if step == calibrationSteps {
			return p, cal, nil
		}
		p.Close()
		excess := (proxied - direct - ways*spec.Delay) / ways
		spec.Overhead = min(max(spec.Overhead+excess, 0), spec.Delay)
	}
}

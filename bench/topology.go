package main

import (
	"context"
	"time"

	"github.com/redlock-go/redlock/bench/internal/delayproxy"
	"github.com/redlock-go/redlock/bench/internal/report"
)

// topology hands each case the addresses of its nodes: the nodes
// themselves, the last of them behind the slow proxy, or every one behind
// a network's delay. It starts each proxy the first time a case needs it.
type topology struct {
	addrs       []string
	slowLatency time.Duration
	lanDelay    time.Duration

	slow, lan *delayproxy.Proxy
	// lanCalibration is what starting the network's proxies measured.
	lanCalibration delayproxy.Calibration
}

// addrsFor returns the addresses c is run on.
func (t *topology) addrsFor(ctx context.Context, c report.Case) ([]string, error) {
	switch {
	case c.SlowNodes > 0:
		if t.slow == nil {
			// The slow node is the last one, reached through a proxy in a
			// child process.
			p, err := delayproxy.Start(ctx, delayproxy.Spec{Upstreams: t.addrs[len(t.addrs)-1:], Delay: t.slowLatency})
			if err != nil {
				return nil, err
			}
			t.slow = p
		}
		return append(append([]string(nil), t.addrs[:c.Nodes-1]...), t.slow.Addrs()...), nil
	case c.DelayUs > 0:
		if t.lan == nil {
			p, cal, err := delayproxy.StartCalibrated(ctx, delayproxy.Spec{Upstreams: t.addrs, Delay: t.lanDelay, BothWays: true})
			if err != nil {
				return nil, err
			}
			t.lan, t.lanCalibration = p, cal
		}
		return t.lan.Addrs()[:c.Nodes], nil
	}
	return t.addrs[:c.Nodes], nil
}

// close stops the proxies started.
func (t *topology) close() {
	for _, p := range []*delayproxy.Proxy{t.slow, t.lan} {
		if p != nil {
			p.Close()
		}
	}
}

package redlock_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// BenchmarkCycle measures one acquire + release of a fresh key, per adapter
// and cluster size. The cross-library comparison lives in the bench module.
func BenchmarkCycle(b *testing.B) {
	for _, nodes := range []int{1, 5} {
		cluster := redlocktest.Start(b, redlocktest.Options{Nodes: nodes})
		for _, a := range adapters {
			b.Run(fmt.Sprintf("%s/%dnodes", a.name, nodes), func(b *testing.B) {
				client := newClient(b, cluster, a, nil)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					lock, err := client.TryAcquire(bg, "bench:"+strconv.Itoa(i))
					if err != nil {
						b.Fatal(err)
					}
					if err := lock.Release(bg); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/%dnodes/parallel", a.name, nodes), func(b *testing.B) {
				client := newClient(b, cluster, a, nil)
				var seq atomic.Int64
				b.ReportAllocs()
				b.SetParallelism(32) // 64 goroutines on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						lock, err := client.TryAcquire(bg, "pbench:"+strconv.FormatInt(seq.Add(1), 10))
						if err != nil {
							b.Error(err)
							return
						}
						lock.Release(bg)
					}
				})
			})
		}
	}
}

// BenchmarkCycle_telemetry measures one acquire + release of a fresh key
// over 3 nodes without telemetry, which must cost what BenchmarkCycle
// does, and with a logger and the OpenTelemetry SDK's providers: what the
// metrics and spans cost when a program asks for them.
func BenchmarkCycle_telemetry(b *testing.B) {
	cluster := redlocktest.Start(b, redlocktest.Options{Nodes: 3})
	_, observed := observe(b)
	for _, tc := range []struct {
		name string
		opts *redlock.Options
	}{
		{"off", fast()},
		{"on", observed},
	} {
		b.Run(tc.name, func(b *testing.B) {
			client := newClient(b, cluster, adapters[0], tc.opts)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				lock, err := client.TryAcquire(bg, "tbench:"+strconv.Itoa(i))
				if err != nil {
					b.Fatal(err)
				}
				if err := lock.Release(bg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

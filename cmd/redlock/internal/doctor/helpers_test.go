package doctor_test

import (
	"context"
	"testing"

	rueidisclient "github.com/redis/rueidis"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/rueidis"
)

var bg = context.Background()

// markerKey is the restart marker the library keeps on every node.
const markerKey = "redlock:marker"

// adapter builds one Conn per node address with one client library.
type adapter struct {
	name  string
	conns func(t testing.TB, addrs []string) []redlock.Conn
}

var adapters = []adapter{
	{"goredis", goredisConns},
	{"rueidis", rueidisConns},
}

func goredisConns(t testing.TB, addrs []string) []redlock.Conn {
	conns := make([]redlock.Conn, len(addrs))
	for i, addr := range addrs {
		c, err := goredis.NewURL("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns
}

func rueidisConns(t testing.TB, addrs []string) []redlock.Conn {
	conns := make([]redlock.Conn, len(addrs))
	for i, addr := range addrs {
		c, err := rueidisclient.NewClient(rueidisclient.ClientOption{
			InitAddress:       []string{addr},
			DisableCache:      true,
			ForceSingleClient: true,
		})
		if err != nil {
			t.Fatalf("rueidis client for %s: %v", addr, err)
		}
		t.Cleanup(c.Close)
		conns[i] = rueidis.New(c)
	}
	return conns
}

// forEachAdapter runs f as a subtest per adapter.
func forEachAdapter(t *testing.T, f func(t *testing.T, a adapter)) {
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) { f(t, a) })
	}
}

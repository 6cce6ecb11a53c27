package fence_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	goredisv9 "github.com/redis/go-redis/v9"
	rueidisclient "github.com/redis/rueidis"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/fence"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// adapters build a Conn to one address with each client library.
var adapters = []struct {
	name string
	conn func(t *testing.T, addr string) redlock.Conn
}{
	{"goredis", func(t *testing.T, addr string) redlock.Conn {
		o, err := goredis.ParseURL("redis://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		c := goredis.NewOwned(goredisv9.NewClient(o))
		t.Cleanup(func() { c.Close() })
		return c
	}},
	{"rueidis", func(t *testing.T, addr string) redlock.Conn {
		rc, err := rueidisclient.NewClient(rueidisclient.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		c := rueidis.NewOwned(rc)
		t.Cleanup(func() { c.Close() })
		return c
	}},
}

// forEachAdapter starts one Redis server and runs f with a Store on it for
// each adapter, as subtests. Each Store has its own key prefix.
func forEachAdapter(t *testing.T, f func(t *testing.T, s *fence.Store, node *redlocktest.Node)) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			f(t, fence.New(a.conn(t, cluster.Node(0).Addr()), &fence.Options{KeyPrefix: a.name + ":"}), cluster.Node(0))
		})
	}
}

// mustRead reads resource and fails the test on an error.
func mustRead(t *testing.T, s *fence.Store, resource string) (string, uint64) {
	t.Helper()
	v, last, err := s.Read(t.Context(), resource)
	if err != nil {
		t.Fatalf("Read %q: %v", resource, err)
	}
	return v, last
}

// wantStale fails the test unless err is a stale-token refusal of token with
// last as the last accepted token.
func wantStale(t *testing.T, err error, resource string, token, last uint64) {
	t.Helper()
	if !errors.Is(err, fence.ErrStaleToken) {
		t.Fatalf("write with token %d after %d: err = %v, want ErrStaleToken", token, last, err)
	}
	var se *fence.StaleTokenError
	if !errors.As(err, &se) || se.Token != token || se.Last != last || se.Resource != resource {
		t.Fatalf("err = %#v, want token %d, last %d, resource %q", err, token, last, resource)
	}
	for _, n := range []uint64{token, last} {
		if !strings.Contains(err.Error(), strconv.FormatUint(n, 10)) {
			t.Errorf("%q does not name token %d", err, n)
		}
	}
}

// A write with the token last written is the same holder's and is
// accepted; only a lower token is refused.
func TestWrite_refusesOnlyLowerTokens(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, s *fence.Store, node *redlocktest.Node) {
		ctx := t.Context()
		const res = "account:refuse"
		if err := s.Write(ctx, res, 5, "five"); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, res, 7, "seven"); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, res, 7, "seven again"); err != nil {
			t.Fatalf("the holder of 7 writing again: %v", err)
		}
		wantStale(t, s.Write(ctx, res, 6, "six"), res, 6, 7)
		wantStale(t, s.Write(ctx, res, 1, "one"), res, 1, 7)
		if v, last := mustRead(t, s, res); v != "seven again" || last != 7 {
			t.Errorf("Read = %q, %d after refused writes; want seven again, 7", v, last)
		}
		// The hash on the server is what Read reports.
		if got, err := node.Do(ctx, "HGET", s.Key(res), "value"); err != nil || got != "seven again" {
			t.Errorf("HGET %s value = %q, %v", s.Key(res), got, err)
		}
		if err := s.Write(ctx, res, 8, ""); err != nil {
			t.Fatal(err)
		}
		if v, last := mustRead(t, s, res); v != "" || last != 8 {
			t.Errorf("Read = %q, %d; want empty value, 8", v, last)
		}
	})
}

func TestWrite_comparesFullUint64(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, s *fence.Store, _ *redlocktest.Node) {
		ctx := t.Context()
		// 9 < 10 as numbers but not as strings; 2^53+1 and 2^53 are equal as
		// doubles; MaxUint64 is the largest token there is.
		steps := []struct {
			token uint64
			ok    bool
		}{
			{9, true}, {10, true}, {9, false},
			{1 << 53, true}, {1<<53 + 1, true}, {1 << 53, false},
			{math.MaxUint64 - 1, true}, {math.MaxUint64 - 1, true}, {math.MaxUint64, true}, {math.MaxUint64 - 1, false},
			{math.MaxUint64, true},
		}
		var last uint64
		for _, st := range steps {
			err := s.Write(ctx, "big", st.token, strconv.FormatUint(st.token, 10))
			if st.ok {
				if err != nil {
					t.Fatalf("token %d after %d: %v", st.token, last, err)
				}
				last = st.token
			} else {
				wantStale(t, err, "big", st.token, last)
			}
			if v, got := mustRead(t, s, "big"); got != last || v != strconv.FormatUint(last, 10) {
				t.Fatalf("after token %d: Read = %q, %d; want last %d", st.token, v, got, last)
			}
		}
	})
}

func TestRead_neverWritten(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, s *fence.Store, _ *redlocktest.Node) {
		if v, last := mustRead(t, s, "nothing"); v != "" || last != 0 {
			t.Errorf("Read of a resource never written = %q, %d", v, last)
		}
	})
}

func TestWrite_invalidArguments(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, s *fence.Store, _ *redlocktest.Node) {
		if err := s.Write(t.Context(), "r", 0, "v"); !errors.Is(err, fence.ErrInvalidToken) {
			t.Errorf("token 0: %v, want ErrInvalidToken", err)
		}
		if err := s.Write(t.Context(), "", 1, "v"); !errors.Is(err, fence.ErrInvalidResource) {
			t.Errorf("empty resource: %v, want ErrInvalidResource", err)
		}
		if _, _, err := s.Read(t.Context(), ""); !errors.Is(err, fence.ErrInvalidResource) {
			t.Errorf("Read of empty resource: %v, want ErrInvalidResource", err)
		}
		// A nil context fails as the library's calls do, rather than panic.
		var nilCtx context.Context
		if err := s.Write(nilCtx, "r", 1, "v"); !errors.Is(err, redlock.ErrNilContext) {
			t.Errorf("Write with a nil ctx: %v, want ErrNilContext", err)
		}
		if _, err := s.ReadFenced(nilCtx, "r", 1); !errors.Is(err, redlock.ErrNilContext) {
			t.Errorf("ReadFenced with a nil ctx: %v, want ErrNilContext", err)
		}
		if _, _, err := s.Read(nilCtx, "r"); !errors.Is(err, redlock.ErrNilContext) {
			t.Errorf("Read with a nil ctx: %v, want ErrNilContext", err)
		}
		if v, last := mustRead(t, s, "r"); v != "" || last != 0 {
			t.Errorf("a refused write left %q, %d", v, last)
		}
	})
}

func TestWrite_serverErrors(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, s *fence.Store, node *redlocktest.Node) {
		ctx := t.Context()
		// A key of another type, and a corrupted fence field.
		if _, err := node.Do(ctx, "SET", s.Key("string"), "x"); err != nil {
			t.Fatal(err)
		}
		if _, err := node.Do(ctx, "HSET", s.Key("corrupt"), "value", "x", "fence", "-1"); err != nil {
			t.Fatal(err)
		}
		err := s.Write(ctx, "string", 1, "v")
		if err == nil || errors.Is(err, fence.ErrStaleToken) || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("write over a string key: %v, want WRONGTYPE", err)
		}
		if _, _, err := s.Read(ctx, "corrupt"); err == nil {
			t.Error("Read of a corrupted fence succeeded")
		}
	})
}

func TestWrite_concurrentWritersKeepTheLargest(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, s *fence.Store, _ *redlocktest.Node) {
		const tokens = 200
		order := rand.Perm(tokens)
		var (
			mu       sync.Mutex
			accepted int
			wg       sync.WaitGroup
		)
		work := make(chan uint64)
		for range 8 {
			wg.Go(func() {
				for tok := range work {
					err := s.Write(t.Context(), "race", tok, strconv.FormatUint(tok, 10))
					var se *fence.StaleTokenError
					switch {
					case err == nil:
						mu.Lock()
						accepted++
						mu.Unlock()
					case !errors.As(err, &se):
						t.Error(err)
					case se.Last < tok:
						t.Errorf("token %d refused after only %d", tok, se.Last)
					}
				}
			})
		}
		for _, i := range order {
			work <- uint64(i + 1)
		}
		close(work)
		wg.Wait()
		if v, last := mustRead(t, s, "race"); last != tokens || v != strconv.Itoa(tokens) {
			t.Errorf("Read = %q, %d; want the largest token %d and its value", v, last, tokens)
		}
		if accepted == 0 {
			t.Error("no write accepted")
		}
	})
}

func TestStore_keyPrefix(t *testing.T) {
	for _, tc := range []struct {
		opts *fence.Options
		want string
	}{
		{nil, "fence:orders"},
		{&fence.Options{}, "fence:orders"},
		{&fence.Options{KeyPrefix: "app:"}, "app:orders"},
	} {
		if got := fence.New(nil, tc.opts).Key("orders"); got != tc.want {
			t.Errorf("Key with %+v = %q, want %q", tc.opts, got, tc.want)
		}
	}
}

func ExampleStaleTokenError() {
	err := error(&fence.StaleTokenError{Resource: "orders:42", Token: 33, Last: 34})
	fmt.Println(errors.Is(err, fence.ErrStaleToken))
	fmt.Println(err)
	// Output:
	// true
	// fence: stale token: resource "orders:42": token 33 is below 34, already seen
}

// Readers of a read-write lock share a resource: ReadShared serves any
// token not below the last write's or a writer's read, whatever other
// readers read, and keeps a writer granted before the readers from writing.
func TestReadShared_readersAndWriters(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, s *fence.Store, _ *redlocktest.Node) {
		ctx := t.Context()
		if err := s.Write(ctx, "table", 10, "v10"); err != nil {
			t.Fatal(err)
		}
		// Readers granted after the writer of 10, with tokens 12 and 11:
		// both read, in either order.
		for _, token := range []uint64{12, 11} {
			if v, err := s.ReadShared(ctx, "table", token); err != nil || v != "v10" {
				t.Fatalf("reader %d: %q, %v", token, v, err)
			}
		}
		// A reader from before the write of 10 has lost its lock.
		if _, err := s.ReadShared(ctx, "table", 9); !errors.Is(err, fence.ErrStaleToken) {
			t.Errorf("reader 9 after write 10: %v, want ErrStaleToken", err)
		}
		// A writer granted before reader 12 (token 11 here stands for a
		// writer whose lock ended before the readers came) may not write
		// or read to write.
		if err := s.Write(ctx, "table", 11, "late"); !errors.Is(err, fence.ErrStaleToken) {
			t.Errorf("a write with 11 after reader 12: %v, want ErrStaleToken", err)
		}
		if _, err := s.ReadFenced(ctx, "table", 11); !errors.Is(err, fence.ErrStaleToken) {
			t.Errorf("a fenced read with 11 after reader 12: %v, want ErrStaleToken", err)
		}
		// The next writer, granted after the readers, reads and writes.
		if _, err := s.ReadFenced(ctx, "table", 13); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadShared(ctx, "table", 12); !errors.Is(err, fence.ErrStaleToken) {
			t.Errorf("reader 12 after writer 13 read: %v, want ErrStaleToken", err)
		}
		if err := s.Write(ctx, "table", 13, "v13"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadShared(ctx, "table", 0); !errors.Is(err, fence.ErrInvalidToken) {
			t.Errorf("token 0: %v, want ErrInvalidToken", err)
		}
	})
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/fence"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// exampleNodes are the URLs of three redis-server processes that TestMain
// starts for the examples, and exampleData the address of a fourth, apart
// from the lock nodes, that holds a fenced resource.
var (
	exampleNodes []string
	exampleData  string
)

func TestMain(m *testing.M) {
	// go-redis logs every refused dial; the tests kill nodes on purpose.
	goredis.SetLogger(nil)
	cluster, err := redlocktest.New(context.Background(), redlocktest.Options{Nodes: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exampleNodes = cluster.URLs()
	data, err := redlocktest.New(context.Background(), redlocktest.Options{Nodes: 1, AppendFsyncAlways: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		cluster.Close()
		os.Exit(1)
	}
	exampleData = data.Node(0).Addr()
	code := m.Run()
	cluster.Close()
	data.Close()
	os.Exit(code)
}

func Example() {
	ctx := context.Background()
	client, err := goredis.Dial(ctx, exampleNodes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	err = client.Do(ctx, "invoice:42", func(ctx context.Context) error {
		// The lock is held and renewed while this runs; ctx is cancelled
		// if it is lost.
		fmt.Println("sending invoice 42")
		return nil
	})
	fmt.Println("error:", err)
	// Output:
	// sending invoice 42
	// error: <nil>
}

// fn takes the lock that Do holds from its context, and sends the lock's
// fencing token with each of its writes to the protected resource: here a
// value in a Redis server of its own, written with package fence. The
// holder writes as often as it needs; a write from a holder whose lock has
// since passed to another client is refused.
func ExampleLockFromContext() {
	ctx := context.Background()
	client, err := goredis.Dial(ctx, exampleNodes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	data := goredis.NewOwned(goredisv9.NewClient(&goredisv9.Options{Addr: exampleData}))
	defer data.Close()
	store := fence.New(data, nil)

	err = client.Do(ctx, "orders:42", func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx)
		for _, state := range []string{"packed", "shipped"} {
			if err := store.Write(ctx, "orders:42", lock.Fence(), state); err != nil {
				return err // ErrStaleToken: another client holds the lock now
			}
		}
		return nil
	})
	fmt.Println("error:", err)
	state, _, err := store.Read(ctx, "orders:42")
	fmt.Println(state, err)
	// Output:
	// error: <nil>
	// shipped <nil>
}

func ExampleClient_TryAcquire() {
	ctx := context.Background()
	client, err := goredis.Dial(ctx, exampleNodes, &redlock.Options{TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	first, err := client.TryAcquire(ctx, "report")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = client.TryAcquire(ctx, "report")
	fmt.Println("second attempt not acquired:", errors.Is(err, redlock.ErrNotAcquired))

	// The error lists each node's outcome. A node that had not yet answered
	// the first attempt when it returned (at a quorum) may grant the second
	// one; that is still short of a quorum, and undone at once.
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		fmt.Printf("short of a quorum of %d out of %d nodes: %v\n", qe.Quorum, len(qe.Nodes), qe.OK < qe.Quorum)
	}
	fmt.Println("release:", first.Release(ctx))
	// Output:
	// second attempt not acquired: true
	// short of a quorum of 2 out of 3 nodes: true
	// release: <nil>
}

func ExampleLock_Done() {
	ctx := context.Background()
	client, err := goredis.Dial(ctx, exampleNodes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	// Without renewal, the lock expires at its validity deadline (less the
	// loss margin): nobody tried to keep it, so it is not lost.
	lock, err := client.Acquire(ctx, "batch", redlock.WithTTL(200*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	<-lock.Done()
	fmt.Println(errors.Is(lock.Err(), redlock.ErrLockExpired), errors.Is(lock.Err(), redlock.ErrLockLost))
	// Output: true false
}

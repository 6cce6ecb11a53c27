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
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// exampleNodes are the URLs of three redis-server processes that TestMain
// starts for the examples.
var exampleNodes []string

func TestMain(m *testing.M) {
	// go-redis logs every refused dial; the tests kill nodes on purpose.
	goredisv9.SetLogger(quietLogger{})
	cluster, err := redlocktest.New(context.Background(), redlocktest.Options{Nodes: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exampleNodes = cluster.URLs()
	// A new, empty deployment: mark its nodes ready, or the restart
	// quarantine keeps them out of every quorum for the recovery delay.
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(context.Background(), "SET", redlock.MarkerKey, "0"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			cluster.Close()
			os.Exit(1)
		}
	}
	code := m.Run()
	cluster.Close()
	os.Exit(code)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

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

	// Without renewal, the lock ends at its validity deadline.
	lock, err := client.Acquire(ctx, "batch", redlock.WithTTL(200*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	<-lock.Done()
	fmt.Println(errors.Is(lock.Err(), redlock.ErrLockLost))
	// Output: true
}

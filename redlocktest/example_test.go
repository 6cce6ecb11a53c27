package redlocktest_test

import (
	"context"
	"fmt"

	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// Three nodes, a client over them, and a lock that still works with a
// node down. In a test, redlocktest.Start(t, ...) does what New and Close
// do here.
func Example() {
	ctx := context.Background()
	goredis.SetLogger(nil) // go-redis would log each dial to the killed node
	nodes, err := redlocktest.New(ctx, redlocktest.Options{Nodes: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nodes.Close()
	client, err := goredis.Dial(ctx, nodes.URLs(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	lock, err := client.TryAcquire(ctx, "job")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("acquired job")
	lock.Release(ctx)

	if err := nodes.Node(0).Kill(); err != nil { // a minority fails: locks still work
		fmt.Println(err)
		return
	}
	lock, err = client.TryAcquire(ctx, "job")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("acquired job with a node down")
	lock.Release(ctx)
	// Output:
	// acquired job
	// acquired job with a node down
}

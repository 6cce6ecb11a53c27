package redlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// An operator sees who holds a lock, checks a holder as a resource server
// would, and forces a stuck lock free; the holder learns it at its next
// extension.
func ExampleClient_ForceRelease() {
	ctx := context.Background()
	worker, err := goredis.Dial(ctx, exampleNodes, &redlock.Options{Owner: "report-worker-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer worker.Close()
	admin, err := goredis.Dial(ctx, exampleNodes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer admin.Close()

	lock, err := worker.TryAcquire(ctx, "example:report")
	if err != nil {
		fmt.Println(err)
		return
	}
	held, _ := admin.List(ctx, "example:")
	for _, h := range held {
		fmt.Printf("%s held by %s\n", h.Key, h.Grants[0].Owner)
	}
	check, _ := admin.Check(ctx, "example:report", lock.Token())
	fmt.Println("current:", check.Current)

	grants, err := admin.ForceRelease(ctx, "example:report", "ops:alice")
	fmt.Println("forced free from", grants[0].Owner, "error:", err)
	check, _ = admin.Check(ctx, "example:report", lock.Token())
	fmt.Println("current:", check.Current)
	err = lock.Extend(ctx, 0)
	fmt.Println("taken over:", errors.Is(err, redlock.ErrTakenOver))
	// Output:
	// example:report held by report-worker-1
	// current: true
	// forced free from report-worker-1 error: <nil>
	// current: false
	// taken over: true
}

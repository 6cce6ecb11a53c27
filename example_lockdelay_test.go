package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// A holder that stops without releasing its lock (here: it just never
// calls Release, as a crashed process would not) keeps everyone out for
// its TTL plus the lock-delay, so that its late writes land first; a
// release would have freed the lock at once.
func ExampleWithLockDelay() {
	ctx := context.Background()
	client, err := goredis.Dial(ctx, exampleNodes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	start := time.Now()
	lock, err := client.Acquire(ctx, "report", redlock.WithTTL(500*time.Millisecond), redlock.WithLockDelay(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	<-lock.Done() // the holder's time is up: it must stop
	fmt.Println("holder's lock expired:", errors.Is(lock.Err(), redlock.ErrLockExpired))

	_, err = client.TryAcquire(ctx, "report")
	fmt.Println("during the delay:", errors.Is(err, redlock.ErrNotAcquired))

	next, err := client.Acquire(ctx, "report")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer next.Release(ctx)
	fmt.Println("next holder after TTL + delay:", time.Since(start) >= 2500*time.Millisecond-2*time.Millisecond)
	// Output:
	// holder's lock expired: true
	// during the delay: true
	// next holder after TTL + delay: true
}

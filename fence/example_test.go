package fence_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock/fence"
	"github.com/redlock-go/redlock/goredis"
)

// A holder writes a Redis-held resource with its lock's fencing token. If it
// paused past the lock's validity and another client has written since with
// a newer token, the write is refused and the holder stops.
func ExampleStore_Write() {
	ctx := context.Background()
	locker, err := goredis.Dial(ctx, []string{"redis://lock-a:6379", "redis://lock-b:6379", "redis://lock-c:6379"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	// The resource lives on its own, persistent server, not on the lock nodes.
	data := goredis.New(goredisv9.NewClient(&goredisv9.Options{Addr: "data:6379"}))
	store := fence.New(data, nil)

	lock, err := locker.Acquire(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release(ctx)

	// ... long work: a GC pause here can outlast the lock ...

	err = store.Write(ctx, "orders:42", lock.Fence(), "shipped")
	switch {
	case errors.Is(err, fence.ErrStaleToken):
		log.Print("lost the lock; someone else has written since: ", err)
	case err != nil:
		log.Fatal(err)
	}
}

// A service that guards a resource with the fencing token sent in a header:
// it keeps the highest token it has seen and answers 409 Conflict to a
// request whose token is below it. The tokens here stand for Lock.Fence of
// two successive holders: 34 for the current one, which writes twice, 33
// for a holder that paused past its validity and sends its write late.
func Example_httpHeader() {
	var (
		mu    sync.Mutex
		last  uint64
		state string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, err := strconv.ParseUint(r.Header.Get(fence.Header), 10, 64)
		if err != nil || token == 0 {
			http.Error(w, "missing fencing token", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		// The check and the write happen under one lock of the service's own.
		if token < last {
			http.Error(w, "stale fencing token", http.StatusConflict)
			return
		}
		last, state = token, r.URL.Query().Get("state")
	}))
	defer srv.Close()

	put := func(token uint64, state string) {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/orders/42?state="+state, nil)
		req.Header.Set(fence.Header, strconv.FormatUint(token, 10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(token, resp.Status)
	}
	put(34, "packed")    // the current holder
	put(34, "shipped")   // the current holder again
	put(33, "cancelled") // the paused holder, too late
	mu.Lock()
	fmt.Println("state:", state)
	mu.Unlock()
	// Output:
	// 34 200 OK
	// 34 200 OK
	// 33 409 Conflict
	// state: shipped
}

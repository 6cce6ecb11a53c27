package wait

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-go/redlock/internal/wire"
)

// recordingListener is a node's Listener that records the channels it is
// asked to subscribe to, in order.
type recordingListener struct{ subscribed chan string }

func (l recordingListener) Listen(ctx context.Context, subscribe, unsubscribe <-chan string, _ func(channel, payload string)) error {
	for {
		select {
		case ch := <-subscribe:
			l.subscribed <- ch
		case <-unsubscribe:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// A waiter's channel named for its client is subscribed before the key's
// channel, on the same connection: a node serves a connection's
// subscriptions in order, so that once the key's channel is subscribed, a
// release that names the client cannot go unheard.
func TestWaker_subscribesTheNamedChannelFirst(t *testing.T) {
	l := recordingListener{subscribed: make(chan string, 4)}
	w := NewWaker([]Listener{l}, 1, "client-1", wire.Layout{})
	defer w.Close()
	_, stop := w.ListenFor("job")
	defer stop()
	channel := wire.Layout{}.ReleaseChannel("job")
	for i, want := range []string{channel + " client-1", channel} {
		select {
		case got := <-l.subscribed:
			if got != want {
				t.Fatalf("subscription %d: %q, want %q", i+1, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("subscription %d (%q) never asked for", i+1, want)
		}
	}
}

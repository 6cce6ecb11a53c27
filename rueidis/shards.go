package rueidis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Sharded subscriptions over a Redis Cluster: the release of a lock is
// announced by SPUBLISH on a shard channel of the lock key's slot, which
// only the masters and replicas of that slot's shard hear, so a subscriber
// must SSUBSCRIBE on the master that serves the slot. A rueidis cluster
// client sends each channel's SSUBSCRIBE (a Receive) and SUNSUBSCRIBE to the
// master of its slot, on the connection it keeps to that master, following
// MOVED redirections; Listen runs one Receive per channel.

// shardUnsubscribeTimeout bounds the SUNSUBSCRIBE commands a sharded Listen
// sends as it returns: the subscriptions live on the client's shared
// connections, which outlive the Listen. A master that does not answer in
// time keeps a subscription nobody reads until its connection closes.
const shardUnsubscribeTimeout = time.Second

// errSubscriptionDropped is the error of a sharded Listen whose
// subscription ended without its SUNSUBSCRIBE: the cluster ended it, as
// the channel's slot moved to another master.
var errSubscriptionDropped = errors.New("rueidis: the cluster ended a shard channel subscription (its slot moved)")

// shardListener holds the sharded subscriptions of one Listen call over a
// Redis Cluster: one Receive per channel, each in a goroutine of its own.
type shardListener struct {
	client rueidis.Client
	subs   map[string]*channelSub // the channels whose Receive runs
	ended  chan *channelSub
	inbox  inbox
	quit   chan struct{} // closed when Listen returns
	all    sync.WaitGroup
}

// channelSub is the Receive of one channel.
type channelSub struct {
	channel   string
	cancel    context.CancelFunc
	confirmed chan struct{} // closed at the server's ssubscribe confirmation
	done      chan struct{} // closed when Receive returned err
	err       error
	wanted    bool // awaited: not unsubscribed since the last subscribe
	leaving   bool // SUNSUBSCRIBE sent since the Receive began
}

// listenSharded is Listen over a Redis Cluster (see Conn.Listen).
func (c *Conn) listenSharded(ctx context.Context, client rueidis.Client, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error {
	l := &shardListener{client: client, subs: map[string]*channelSub{}, ended: make(chan *channelSub),
		inbox: inbox{ready: make(chan struct{}, 1)}, quit: make(chan struct{})}
	defer l.close()
	err := l.run(ctx, subscribe, unsubscribe, onMessage)
	if ctx.Err() == nil && isUnknownCommand(err) {
		c.classicPubSub.Store(true)
	}
	return err
}

// run handles subscription changes, messages and the ends of Receive
// calls until ctx ends or something fails.
func (l *shardListener) run(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error {
	for {
		var err error
		select {
		case ch := <-subscribe:
			err = l.subscribe(ctx, ch)
		case ch := <-unsubscribe:
			err = l.unsubscribe(ctx, ch)
		case <-l.inbox.ready:
			for _, m := range l.inbox.take() {
				onMessage(m.Channel, m.Message)
			}
		case s := <-l.ended:
			err = l.end(ctx, s)
		case <-ctx.Done():
			return ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}

// subscribe starts channel's Receive, unless it runs already (a
// SUNSUBSCRIBE of it still under way: it starts again once that ends).
func (l *shardListener) subscribe(ctx context.Context, channel string) error {
	if s, ok := l.subs[channel]; ok {
		s.wanted = true
		return nil
	}
	return l.start(ctx, channel)
}

// start runs channel's Receive and waits for the server to confirm the
// subscription, so that a SUNSUBSCRIBE sent later cannot overtake it.
func (l *shardListener) start(ctx context.Context, channel string) error {
	rctx, cancel := context.WithCancel(ctx)
	s := &channelSub{channel: channel, cancel: cancel, wanted: true,
		confirmed: make(chan struct{}), done: make(chan struct{})}
	var once sync.Once
	rctx = rueidis.WithOnSubscriptionHook(rctx, func(m rueidis.PubSubSubscription) {
		if m.Kind == "ssubscribe" {
			once.Do(func() { close(s.confirmed) })
		}
	})
	l.subs[channel] = s
	l.all.Add(1)
	go l.receive(rctx, s)
	select {
	case <-s.confirmed:
		// Passed on as an empty message (see redlock.Listener).
		l.inbox.put(rueidis.PubSubMessage{Channel: channel})
	case <-s.done: // its end, sent to l.ended, tells why
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// receive runs s's Receive, then hands s to the Listen goroutine.
func (l *shardListener) receive(ctx context.Context, s *channelSub) {
	defer l.all.Done()
	cmd := l.client.B().Ssubscribe().Channel(s.channel).Build()
	s.err = l.client.Receive(ctx, cmd, l.inbox.put)
	close(s.done)
	select {
	case l.ended <- s:
	case <-l.quit:
	}
}

// unsubscribe sends SUNSUBSCRIBE channel; its Receive ends at the server's
// confirmation.
func (l *shardListener) unsubscribe(ctx context.Context, channel string) error {
	s, ok := l.subs[channel]
	if !ok || !s.wanted {
		return nil
	}
	s.wanted = false
	if s.leaving {
		return nil
	}
	s.leaving = true
	return l.client.Do(ctx, l.client.B().Sunsubscribe().Channel(channel).Build()).Error()
}

// end handles the end of s's Receive: the error that ended it; or the
// confirmation of its SUNSUBSCRIBE, after which it starts again when its
// channel was subscribed again meanwhile; or the cluster's own
// sunsubscribe, which fails Listen.
func (l *shardListener) end(ctx context.Context, s *channelSub) error {
	delete(l.subs, s.channel)
	switch {
	case s.err != nil:
		return fmt.Errorf("rueidis: shard channel %q: %w", s.channel, s.err)
	case !s.leaving:
		return fmt.Errorf("%w: %q", errSubscriptionDropped, s.channel)
	case s.wanted:
		return l.start(ctx, s.channel)
	}
	return nil
}

// close ends every Receive: the channels still subscribed get SUNSUBSCRIBE
// first, as the client's connections outlive the Listen.
func (l *shardListener) close() {
	ctx, cancel := context.WithTimeout(context.Background(), shardUnsubscribeTimeout)
	defer cancel()
	for ch, s := range l.subs {
		select {
		case <-s.confirmed:
			if !s.leaving {
				_ = l.client.Do(ctx, l.client.B().Sunsubscribe().Channel(ch).Build()).Error()
			}
		default:
		}
		s.cancel()
	}
	close(l.quit)
	l.all.Wait()
}

// inbox queues the messages that Receive calls hand over, without ever
// blocking them: the goroutine that reads the client's shared connection to
// a master waits for a Receive that falls behind, and with it every command
// sent on that connection, locks included.
type inbox struct {
	mu       sync.Mutex
	messages []rueidis.PubSubMessage
	ready    chan struct{} // holds a signal while messages is not empty
}

// put queues m.
func (b *inbox) put(m rueidis.PubSubMessage) {
	b.mu.Lock()
	b.messages = append(b.messages, m)
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// take returns the messages queued, oldest first, and empties the queue.
func (b *inbox) take() []rueidis.PubSubMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.messages
	b.messages = nil
	return m
}

// knowsShardedPubSub asks a node of the cluster whether it has SSUBSCRIBE
// (COMMAND INFO), and reports false only when the node says it does not
// (Redis before 7.0), which it remembers: Listen then subscribes by
// SUBSCRIBE from its first channel on, where a refused SSUBSCRIBE would
// fail it, and leave its first waiters to their retry delays until the
// Client listens again. A node that does not answer (or refuses COMMAND)
// gets SSUBSCRIBE, whose refusal has the same effect, later.
func (c *Conn) knowsShardedPubSub(ctx context.Context, client rueidis.Client) bool {
	info, err := client.Do(ctx, client.B().CommandInfo().CommandName("ssubscribe").Build()).ToArray()
	if err != nil || len(info) != 1 || !info[0].IsNil() {
		return true
	}
	c.classicPubSub.Store(true)
	return false
}

// isUnknownCommand reports whether err is a server's refusal of a command
// it does not have: SSUBSCRIBE before Redis 7.0.
func isUnknownCommand(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command")
}

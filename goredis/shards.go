package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sharded subscriptions over a Redis Cluster: the release of a lock is
// announced by SPUBLISH on a shard channel of the lock key's slot, which
// only the masters and replicas of that slot's shard hear, so a subscriber
// must SSUBSCRIBE on the master that serves the slot. go-redis's
// ClusterClient.SSubscribe binds one PubSub to the master of its first
// channel's slot; Listen keeps one such PubSub per master, and sends each
// channel's SSUBSCRIBE and SUNSUBSCRIBE to the master of its slot.

// shardPingInterval is how long a shard's subscription connection stays
// silent before it is sent a PING; one more silent interval and the master
// is taken for gone (paused, or cut off: a failover then promotes another)
// and Listen fails, so that its waiters resubscribe where the slots are
// served. Shorter notices a silent master sooner, at one PING per idle
// master per interval.
const shardPingInterval = 3 * time.Second

// errSubscriptionDropped is the error of a sharded Listen whose
// subscription the cluster ended by itself: the channel's slot moved to
// another master, which sends sunsubscribe to its subscribers.
var errSubscriptionDropped = errors.New("goredis: the cluster ended a shard channel subscription (its slot moved)")

// shardListener holds the sharded subscriptions of one Listen call over a
// Redis Cluster: one PubSub per master, each reading in a goroutine of its
// own and handing what it reads to the Listen goroutine.
type shardListener struct {
	cluster  *redis.ClusterClient
	shards   map[string]*shard // by master address
	channels map[string]*shard // each subscribed channel's shard
	events   chan shardEvent
	quit     chan struct{} // closed when Listen returns
	reading  sync.WaitGroup
}

// shard is the subscription connection to one master.
type shard struct {
	ps *redis.PubSub
	// leaving counts, per channel, the sunsubscribe confirmations still due
	// for the SUNSUBSCRIBE commands sent; any other sunsubscribe is the
	// cluster's own.
	leaving map[string]int
}

// shardEvent is what a shard's connection read: a message, a subscription
// change, or the error that ended it.
type shardEvent struct {
	shard *shard
	msg   any
	err   error
}

// listenSharded is Listen over a Redis Cluster (see Conn.Listen).
func (c *Conn) listenSharded(ctx context.Context, cluster *redis.ClusterClient, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error {
	l := &shardListener{cluster: cluster, shards: map[string]*shard{}, channels: map[string]*shard{},
		events: make(chan shardEvent), quit: make(chan struct{})}
	defer l.close()
	err := l.run(ctx, subscribe, unsubscribe, onMessage)
	if ctx.Err() == nil {
		// The slots may have moved: let the next Listen find their masters.
		cluster.ReloadState(ctx)
		if isUnknownCommand(err) {
			c.classicPubSub.Store(true)
		}
	}
	return err
}

// run handles subscription changes and what the shards read until ctx
// ends or something fails.
func (l *shardListener) run(ctx context.Context, subscribe, unsubscribe <-chan string, onMessage func(channel, payload string)) error {
	for {
		var err error
		select {
		case ch := <-subscribe:
			err = l.subscribe(ctx, ch)
		case ch := <-unsubscribe:
			err = l.unsubscribe(ctx, ch)
		case e := <-l.events:
			err = l.handle(e, onMessage)
		case <-ctx.Done():
			return ctx.Err()
		}
		if err != nil {
			return err
		}
	}
}

// subscribe sends SSUBSCRIBE channel to the master of channel's slot, on
// that master's PubSub, which it opens on first need.
func (l *shardListener) subscribe(ctx context.Context, channel string) error {
	if _, ok := l.channels[channel]; ok {
		return nil
	}
	master, err := l.cluster.MasterForKey(ctx, channel)
	if err != nil {
		return fmt.Errorf("goredis: the master of shard channel %q: %w", channel, err)
	}
	addr := master.Options().Addr
	s := l.shards[addr]
	if s == nil {
		// A PubSub without channels connects on its first SSUBSCRIBE, to
		// the master of that channel's slot.
		s = &shard{ps: l.cluster.SSubscribe(ctx), leaving: map[string]int{}}
		if err := s.ps.SSubscribe(ctx, channel); err != nil {
			_ = s.ps.Close()
			return err
		}
		l.shards[addr] = s
		l.reading.Add(1)
		go l.read(s)
	} else if err := s.ps.SSubscribe(ctx, channel); err != nil {
		return err
	}
	l.channels[channel] = s
	return nil
}

// unsubscribe sends SUNSUBSCRIBE channel to the master it was subscribed
// on. The master's PubSub stays open for the next channels of its slots.
func (l *shardListener) unsubscribe(ctx context.Context, channel string) error {
	s, ok := l.channels[channel]
	if !ok {
		return nil
	}
	delete(l.channels, channel)
	s.leaving[channel]++
	return s.ps.SUnsubscribe(ctx, channel)
}

// handle passes on a message, and fails on a shard's error or on a
// subscription that the cluster ended.
func (l *shardListener) handle(e shardEvent, onMessage func(channel, payload string)) error {
	if e.err != nil {
		return e.err
	}
	switch m := e.msg.(type) {
	case *redis.Message:
		onMessage(m.Channel, m.Payload)
	case *redis.Subscription:
		if m.Kind != "sunsubscribe" {
			deliver(m, onMessage)
			return nil
		}
		if n := e.shard.leaving[m.Channel]; n > 0 {
			if n == 1 {
				delete(e.shard.leaving, m.Channel)
			} else {
				e.shard.leaving[m.Channel] = n - 1
			}
			return nil
		}
		return fmt.Errorf("%w: %q", errSubscriptionDropped, m.Channel)
	}
	return nil
}

// read hands what s's connection reads to the Listen goroutine, until the
// connection fails, its master stays silent past a PING (see
// shardPingInterval), or Listen returns.
func (l *shardListener) read(s *shard) {
	defer l.reading.Done()
	pinged := false
	for {
		msg, err := s.ps.ReceiveTimeout(context.Background(), shardPingInterval)
		var ne net.Error
		switch {
		case err == nil:
			pinged = false
			if _, pong := msg.(*redis.Pong); pong {
				continue
			}
		case errors.As(err, &ne) && ne.Timeout() && !pinged:
			pinged = true
			if err = s.ps.Ping(context.Background()); err == nil {
				continue
			}
		case errors.As(err, &ne) && ne.Timeout():
			err = fmt.Errorf("goredis: a shard's master did not answer a PING within %s: %w", shardPingInterval, err)
		}
		select {
		case l.events <- shardEvent{shard: s, msg: msg, err: err}:
		case <-l.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

// close closes every shard's connection and waits for their readers.
func (l *shardListener) close() {
	close(l.quit)
	for _, s := range l.shards {
		_ = s.ps.Close()
	}
	l.reading.Wait()
}

// knowsShardedPubSub asks a node of cluster whether it has SSUBSCRIBE
// (COMMAND INFO), and reports false only when the node says it does not
// (Redis before 7.0), which it remembers: Listen then subscribes by
// SUBSCRIBE from its first channel on, where a refused SSUBSCRIBE would
// fail it, and leave its first waiters to their retry delays until the
// Client listens again. A node that does not answer (or refuses COMMAND)
// gets SSUBSCRIBE, whose refusal has the same effect, later.
func (c *Conn) knowsShardedPubSub(ctx context.Context, cluster *redis.ClusterClient) bool {
	info, err := cluster.Do(ctx, "command", "info", "ssubscribe").Slice()
	if err != nil || len(info) != 1 || info[0] != nil {
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

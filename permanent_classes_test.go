package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	goredisv9 "github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// failsFast acquires key on conns and checks that Acquire ends at once,
// long before its context, with ErrInvalidOptions and a message naming the
// node and the cause.
func failsFast(t *testing.T, conns []redlock.Conn, key, cause string) {
	t.Helper()
	c, err := redlock.New(conns, &redlock.Options{TTL: 2 * time.Second, NodeTimeout: 300 * time.Millisecond, DisableQuarantine: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	_, err = c.Acquire(ctx, key)
	if !errors.Is(err, redlock.ErrInvalidOptions) || ctx.Err() != nil {
		t.Fatalf("Acquire: %v, want ErrInvalidOptions at once", err)
	}
	if msg := err.Error(); !strings.Contains(msg, conns[0].Name()) || !strings.Contains(msg, cause) {
		t.Errorf("Acquire: %v, want the node %s and %s named", err, conns[0].Name(), cause)
	}
}

// A node that is a replica (READONLY) fails Acquire at once.
func TestAcquire_replicaFailsFast(t *testing.T) {
	t.Parallel()
	forEachAdapter(t, func(t *testing.T, a adapter) {
		_, replica := masterWithReplica(t)
		failsFast(t, a.conns(t, replica.Addrs()), "job", "READONLY")
	})
}

// A replica of Redis 6.2, whose script errors wrap the READONLY of the
// script's write, fails Acquire at once too.
func TestAcquire_redis62ReplicaFailsFast(t *testing.T) {
	t.Parallel()
	forEachAdapter(t, func(t *testing.T, a adapter) {
		_, replica := masterWithReplica(t)
		conns := a.conns(t, replica.Addrs())
		code := "ERR "
		if a.name == "rueidis" {
			code = "" // rueidis drops ERR from the errors it returns
		}
		for i, conn := range conns {
			conns[i] = redis62Errors{conn, code}
		}
		failsFast(t, conns, "job", "READONLY")
	})
}

// redis62Errors is a node that words the errors of its scripts' commands
// as Redis 6.2 does: a script's error wraps the command's, after where in
// the script it happened ("ERR Error running script (call to f_<sha1>):
// @user_script:7: @user_script: 7: -READONLY You can't write against a
// read only replica."), where Redis 7.x gives the command's error with
// the place after it ("READONLY ... script: <sha1>, on @user_script:7.");
// and an error that the batch script caught is the command's after the
// place ("@user_script: 7: -READONLY ..."). The script's error starts
// with code, the ERR of the reply as the adapter returns it.
type redis62Errors struct {
	redlock.Conn
	code string
}

// EvalSHA runs the script, and words the errors of its commands as Redis
// 6.2 does.
func (c redis62Errors) EvalSHA(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error) {
	v, err := c.Conn.EvalSHA(ctx, sha1, source, keys, args...)
	if err != nil {
		if msg, _, ok := strings.Cut(err.Error(), " script: "); ok {
			err = errors.New(c.code + "Error running script (call to f_" + sha1 + "): @user_script:7: @user_script: 7: -" + msg)
		}
		return v, err
	}
	if replies, ok := v.([]any); ok {
		for i, r := range replies {
			if e, ok := r.(error); ok {
				replies[i] = errors.New("@user_script: 7: -" + e.Error())
			}
		}
	}
	return v, nil
}

// A node whose scripting commands are renamed away (EVAL, EVALSHA, FCALL
// and FUNCTION unknown) fails Acquire at once.
func TestAcquire_scriptingDisabledFailsFast(t *testing.T) {
	needs(t, redlocktest.Functions) // 6.2 refuses to rename FCALL and FUNCTION
	forEachAdapter(t, func(t *testing.T, a adapter) {
		node := redlocktest.Start(t, redlocktest.Options{Nodes: 1,
			Config: []string{`rename-command EVALSHA ""`, `rename-command EVAL ""`, `rename-command FCALL ""`, `rename-command FUNCTION ""`}})
		failsFast(t, a.conns(t, node.Addrs()), "job", "unknown command")
	})
}

// A client of one server pointed at a Redis Cluster master keeps a lock's
// keys in different slots: the master refuses with CROSSSLOT, and Acquire
// ends at once.
func TestAcquire_crossSlotFailsFast(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{RedisCluster: true})
	key := "job"
	conn := goredis.NewOwned(goredisv9.NewClient(&goredisv9.Options{Addr: cluster.NodeForKey(key).Addr()}))
	failsFast(t, []redlock.Conn{conn}, key, "CROSSSLOT")
}

// A node busy running a long script answers BUSY: Acquire keeps trying and
// takes the lock once the script ended. Over rueidis, the process used to
// die: the wake-up subscription's connection, given back to rueidis's
// pool, was unsubscribed there, and rueidis v1.0.79 panics on the BUSY
// replies ("protocol bug, message handled out of order").
func TestAcquire_busyNodeIsRetried(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		// lua-time-limit: Redis 7.0 renamed it busy-reply-threshold, which
		// 6.2 does not know, and kept the old name.
		node := redlocktest.Start(t, redlocktest.Options{Nodes: 1, Config: []string{"lua-time-limit 50"}})
		c := newClient(t, node, a, fast())
		var wg sync.WaitGroup
		defer wg.Wait()
		busyScript := func() <-chan struct{} {
			ended := make(chan struct{})
			wg.Go(func() {
				defer close(ended)
				// About a second of busy loop, then the script ends by itself.
				node.Node(0).Do(bg, "EVAL", "local t = redis.call('TIME') while true do local n = redis.call('TIME') if (n[1] - t[1]) * 1000000 + n[2] - t[2] > 1000000 then return 1 end end", "0")
			})
			return ended
		}
		ended := busyScript()
		isBusy := func() bool {
			_, err := node.Node(0).Do(bg, "PING")
			return err != nil && strings.Contains(err.Error(), "BUSY")
		}
		for deadline := time.Now().Add(10 * time.Second); !isBusy(); time.Sleep(10 * time.Millisecond) {
			select {
			case <-ended:
				// It ended before a PING saw the node busy (this goroutine
				// was not scheduled meanwhile): once more.
				ended = busyScript()
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("the node never answered BUSY while the script ran")
			}
		}
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		lock, err := c.Acquire(ctx, "busy")
		if err != nil {
			t.Fatalf("Acquire while the node ran a script: %v, want the lock once it ended", err)
		}
		lock.Release(bg)
	})
}

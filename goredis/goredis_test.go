package goredis_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// commandLog is a go-redis hook that records each command as go-redis
// prints it for logs and traces.
type commandLog struct {
	mu       sync.Mutex
	commands []string
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.mu.Lock()
		l.commands = append(l.commands, cmd.String())
		l.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestEvalSHA_sendsAndPrintsItsArguments(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	client := redis.NewClient(&redis.Options{Addr: cluster.Node(0).Addr(), MaxRetries: -1})
	log := &commandLog{}
	client.AddHook(log)
	conn := goredis.NewOwned(client)
	defer conn.Close()

	ctx := context.Background()
	const source = `redis.call("SET", KEYS[1], ARGV[1]); return {KEYS[1], ARGV[1], ARGV[2]}`
	sha := "ffffffffffffffffffffffffffffffffffffffff" // not loaded: EVAL follows
	for range 2 {
		v, err := conn.EvalSHA(ctx, sha, source, []string{"lock:orders"}, "token-1", "")
		if err != nil {
			t.Fatal(err)
		}
		reply, _ := v.([]any)
		if len(reply) != 3 || reply[0] != "lock:orders" || reply[1] != "token-1" || reply[2] != "" {
			t.Fatalf("reply %#v, want the key and both arguments back", v)
		}
	}
	if got, err := client.Get(ctx, "lock:orders").Result(); err != nil || got != "token-1" {
		t.Errorf("key holds %q, %v; want token-1", got, err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	var evals int
	for _, c := range log.commands {
		if strings.HasPrefix(c, "eval") {
			evals++
			if !strings.Contains(c, "lock:orders token-1") {
				t.Errorf("command printed as %q, want its key and arguments in it", c)
			}
		}
	}
	if evals != 4 {
		t.Errorf("saw %d evalsha/eval commands, want 4 (each EVALSHA answered NOSCRIPT, then EVAL): %q", evals, log.commands)
	}
}

// A go-redis failover client's options name no server: two of them, for
// two masters, are two nodes, where both were named "FailoverClient" and
// redlock.New refused them as one node listed twice. The same client
// twice is still one node, and NewNamed names a node as its caller says.
func TestNew_failoverClientsAreNodesOfTheirOwn(t *testing.T) {
	a := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "locks", SentinelAddrs: []string{"127.0.0.1:1"}})
	b := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "locks2", SentinelAddrs: []string{"127.0.0.1:1"}})
	defer a.Close()
	defer b.Close()
	if ca, cb := goredis.New(a), goredis.New(b); ca.Name() == cb.Name() || !strings.HasPrefix(ca.Name(), "FailoverClient@") {
		t.Errorf("names %q and %q, want two FailoverClient@… names", ca.Name(), cb.Name())
	}
	if _, err := redlock.New([]redlock.Conn{goredis.New(a), goredis.New(b), goredis.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"}))}, nil); err != nil {
		t.Errorf("two failover clients and a plain one: %v", err)
	}
	if _, err := redlock.New([]redlock.Conn{goredis.New(a), goredis.New(a), goredis.New(b)}, nil); !errors.Is(err, redlock.ErrDuplicateNode) {
		t.Errorf("one failover client twice: %v, want ErrDuplicateNode", err)
	}
	if got := goredis.NewNamed(a, "locks@sentinel").Name(); got != "locks@sentinel" {
		t.Errorf("NewNamed: %q", got)
	}
	fc := redis.NewFailoverClusterClient(&redis.FailoverOptions{MasterName: "locks", SentinelAddrs: []string{"127.0.0.1:1"}})
	defer fc.Close()
	if got := goredis.New(fc).Name(); !strings.HasPrefix(got, "cluster@") {
		t.Errorf("a failover cluster client named %q, want cluster@…", got)
	}
}

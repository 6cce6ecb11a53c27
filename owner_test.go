package redlock_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/redlocktest"
)

// Every grant carries its holder's owner and when it began: Inspect shows
// them for a lock, a permit and each reader, by default host:pid.
func TestOwner_inspectShowsHolderAndSince(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		opts := &redlock.Options{TTL: 5 * time.Second, NodeTimeout: 300 * time.Millisecond}
		client := newClient(t, cluster, a, opts)
		host, _ := os.Hostname()
		t.Run("defaultOwner", func(t *testing.T) {
			wantInspectedOwner(t, cluster, client, "default", fmt.Sprintf("%s:%d", host, os.Getpid()))
		})
		opts.Owner = "billing/worker-7@" + host
		named := newClient(t, cluster, a, opts)
		t.Run("optionsOwner", func(t *testing.T) { wantInspectedOwner(t, cluster, named, "named", opts.Owner) })
		t.Run("withOwner", func(t *testing.T) {
			wantInspectedOwner(t, cluster, named, "per-call", "cron.nightly", redlock.WithOwner("cron.nightly"))
		})
		t.Run("permit", func(t *testing.T) {
			wantInspectedOwner(t, cluster, named, "sem", "permit-holder", redlock.WithLimit(1), redlock.WithOwner("permit-holder"))
		})
		t.Run("readers", func(t *testing.T) { wantInspectedReaders(t, cluster, named) })
	})
}

// wantInspectedOwner takes name with opts through client, and checks that
// every node shows owner as its holder, since the call began.
func wantInspectedOwner(t *testing.T, cluster *redlocktest.Cluster, client *redlock.Client, name, owner string, opts ...redlock.LockOption) {
	t.Helper()
	before := time.Now()
	lock, err := client.TryAcquire(bg, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(bg)
	if lock.Owner() != owner {
		t.Errorf("Lock.Owner() = %q, want %q", lock.Owner(), owner)
	}
	waitForKey(t, cluster, lock.Key(), lock.Token())
	states, err := client.Inspect(bg, lock.Key())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range states {
		if s.Holder != lock.Token() || s.Owner != owner || s.Since.Before(before.Truncate(time.Microsecond)) || s.Since.After(time.Now()) {
			t.Errorf("node %d: holder %q, owner %q since %s; want %q since the call at %s", i, s.Holder, s.Owner, s.Since, owner, before)
		}
	}
}

// wantInspectedReaders checks that each reader of a lock shows with its
// own owner.
func wantInspectedReaders(t *testing.T, cluster *redlocktest.Cluster, client *redlock.Client) {
	t.Helper()
	owners := []string{"reader-a", "reader-b"}
	for _, owner := range owners {
		lock, err := client.TryAcquire(bg, "shared", redlock.WithShared(), redlock.WithOwner(owner))
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release(bg)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		states, err := client.Inspect(bg, "shared")
		if err != nil {
			t.Fatal(err)
		}
		if bad := readerOwnersWrong(states, owners); bad == "" {
			return
		} else if time.Now().After(deadline) {
			t.Fatal(bad)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readerOwnersWrong says how states differ from every node holding one
// reader of each owner, "" when they do not.
func readerOwnersWrong(states []redlock.NodeState, owners []string) string {
	for i, s := range states {
		var got []string
		for j, g := range s.ReaderGrants {
			if g.Token != s.Readers[j] || g.Since.IsZero() {
				return fmt.Sprintf("node %d: reader %d: %+v for token %q", i, j, g, s.Readers[j])
			}
			got = append(got, g.Owner)
		}
		if len(got) != len(owners) || !strings.Contains(strings.Join(got, ","), owners[0]) || !strings.Contains(strings.Join(got, ","), owners[1]) {
			return fmt.Sprintf("node %d: reader owners %q, want %q", i, got, owners)
		}
	}
	return ""
}

// The lock key's value stays a plain string: redsync and node-redlock,
// which SET NX a value and compare it, are kept out by our lock, and can
// release it by its token as they release theirs.
func TestOwner_tokenStaysAPlainString(t *testing.T) {
	forEachAdapter(t, func(t *testing.T, a adapter) {
		cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 3})
		client := newClient(t, cluster, a, &redlock.Options{Owner: "svc.example:99", NodeTimeout: 300 * time.Millisecond})
		lock, err := client.TryAcquire(bg, "shared-name")
		if err != nil {
			t.Fatal(err)
		}
		waitForKey(t, cluster, "shared-name", lock.Token())
		const compareAndDelete = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`
		for _, n := range cluster.Nodes() {
			if v := do(t, n, "TYPE", "shared-name"); v != "string" {
				t.Errorf("node %d: the lock key is a %s", n.Index(), v)
			}
			if v := do(t, n, "SET", "shared-name", "redsync-value", "NX", "PX", "1000"); v != "" {
				t.Errorf("node %d: another library's SET NX took our lock: %q", n.Index(), v)
			}
			if v := do(t, n, "EVAL", compareAndDelete, "1", "shared-name", lock.Token()); v != "1" {
				t.Errorf("node %d: a compare-and-delete with our token answered %q", n.Index(), v)
			}
		}
	})
}

// An owner that would not fit in a token is refused with ErrInvalidOwner,
// by New for Options.Owner and by each call for WithOwner.
func TestOwner_invalid(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	conns := adapters[0].conns(t, cluster.Addrs())
	for _, bad := range []string{"has space", "tab\t", "ünïcode", strings.Repeat("o", redlock.MaxOwnerBytes+1)} {
		if _, err := redlock.New(conns, &redlock.Options{Owner: bad}); !errors.Is(err, redlock.ErrInvalidOwner) || !errors.Is(err, redlock.ErrInvalidOptions) {
			t.Errorf("New with Owner %q: %v, want ErrInvalidOwner and ErrInvalidOptions", bad, err)
		}
	}
	// A huge owner is quoted in part, as a huge key is.
	_, err := redlock.New(conns, &redlock.Options{Owner: strings.Repeat("x", 5000)})
	if !errors.Is(err, redlock.ErrInvalidOwner) || len(err.Error()) > 500 || !strings.Contains(err.Error(), "(5000 bytes)") {
		t.Errorf("New with an owner of 5,000 bytes: %d bytes of error, want its size and at most 500: %.200s", len(err.Error()), err)
	}
	forEachAdapter(t, func(t *testing.T, a adapter) {
		client := newClient(t, cluster, a, nil)
		for _, bad := range []string{"", "has space", "new\nline", strings.Repeat("o", redlock.MaxOwnerBytes+1)} {
			if _, err := client.TryAcquire(bg, "k", redlock.WithOwner(bad)); !errors.Is(err, redlock.ErrInvalidOwner) {
				t.Errorf("TryAcquire WithOwner(%q): %v, want ErrInvalidOwner", bad, err)
			}
			if _, err := client.AcquireAll(bg, []string{"a", "b"}, redlock.WithOwner(bad)); !errors.Is(err, redlock.ErrInvalidOwner) {
				t.Errorf("AcquireAll WithOwner(%q): %v, want ErrInvalidOwner", bad, err)
			}
		}
	})
}

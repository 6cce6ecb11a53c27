package goredis_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://:s3cret@host:6379/0":                        "redis://:xxxxx@host:6379/0",
		"redis://user:s3cret@host:6379":                      "redis://user:xxxxx@host:6379",
		"redis://host:6379":                                  "redis://host:6379",
		"redis://:sp@s1:26379?master_name=m&password=s3cret": "redis://:xxxxx@s1:26379?master_name=m&password=xxxxx",
		"redis://u:s3cret@host:port%zz/0":                    "redis://u:xxxxx@host:port%zz/0",
	} {
		if got := goredis.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A rediss:// URL to a plaintext port fails Dial with the reason, instead of
// dialing "successfully" and timing out on every request.
func TestDial_tlsToAPlaintextPort(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	client, err := goredis.Dial(context.Background(), []string{"rediss://" + cluster.Node(0).Addr()}, nil)
	if err == nil {
		client.Close()
		t.Fatal("Dial of rediss:// to a plaintext port succeeded")
	}
	if !errors.Is(err, goredis.ErrInvalidURL) || !strings.Contains(err.Error(), "plaintext") {
		t.Errorf("Dial = %v, want ErrInvalidURL saying the server answers in plaintext", err)
	}
	// The same node over redis:// dials.
	client, err = goredis.Dial(context.Background(), []string{"redis://" + cluster.Node(0).Addr()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	client.Close()
}

// One server listed under two names (localhost and 127.0.0.1) fails Dial
// with ErrDuplicateNode naming both entries: its two votes would break the
// quorum's independence.
func TestDial_oneServerUnderTwoNames(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 2})
	port := strconv.Itoa(cluster.Node(0).Port())
	urls := []string{"redis://localhost:" + port, "redis://127.0.0.1:" + port, cluster.Node(1).URL()}
	client, err := goredis.Dial(context.Background(), urls, nil)
	if err == nil {
		client.Close()
		t.Fatal("Dial of one server under two names succeeded")
	}
	if !errors.Is(err, redlock.ErrDuplicateNode) || !strings.Contains(err.Error(), "localhost:"+port) || !strings.Contains(err.Error(), "127.0.0.1:"+port) {
		t.Errorf("Dial = %v, want ErrDuplicateNode naming both entries", err)
	}
}

package goredis_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/redlocktest"
)

// recordLog is a slog.Handler that keeps each record's level and message.
type recordLog struct {
	mu      sync.Mutex
	records []string
}

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Level.String()+" "+r.Message)
	return nil
}

func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordLog) WithGroup(string) slog.Handler      { return h }

// about returns the first record that mentions s, or "".
func (h *recordLog) about(s string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if strings.Contains(r, s) {
			return r
		}
	}
	return ""
}

// SetLogger sends go-redis's line about a failed dial to the slog.Logger
// given, as a Warn record; SetLogger(nil) then drops them, without a
// go-redis import in the caller.
func TestSetLogger_routesGoRedisLines(t *testing.T) {
	cluster := redlocktest.Start(t, redlocktest.Options{Nodes: 1})
	down := cluster.Node(0)
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	h := &recordLog{}
	goredis.SetLogger(slog.New(h))
	defer goredis.SetLogger(nil)
	client, err := goredis.Dial(t.Context(), []string{down.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for h.about(down.Addr()) == "" {
		if ctx.Err() != nil {
			t.Fatalf("no record about the down node %s in 10 s", down.Addr())
		}
		client.TryAcquire(ctx, "job") // dials the down node again
	}
	if r := h.about(down.Addr()); !strings.HasPrefix(r, "WARN redis: ") {
		t.Errorf("record %q, want a WARN with go-redis's line", r)
	}
}

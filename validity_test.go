package redlock

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDrift(t *testing.T) {
	tests := []struct {
		ttl    time.Duration
		factor float64
		want   time.Duration
	}{
		{10 * time.Second, 0.01, 102 * time.Millisecond},
		{time.Second, 0.01, 12 * time.Millisecond},
		{100 * time.Millisecond, 0.01, 3 * time.Millisecond},
		{30 * time.Second, 0.05, 1502 * time.Millisecond},
		{10 * time.Millisecond, 0, 2 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := drift(tt.ttl, tt.factor); got != tt.want {
			t.Errorf("drift(%s, %g) = %s, want %s", tt.ttl, tt.factor, got, tt.want)
		}
	}
}

func TestCheckTTL(t *testing.T) {
	tests := []struct {
		ttl  time.Duration
		ok   bool
		name string
	}{
		{10 * time.Second, true, "usual"},
		{3 * time.Millisecond, true, "just above the 2 ms constant"},
		{2 * time.Millisecond, false, "equal to the drift"},
		{time.Millisecond, false, "below the drift"},
		{500 * time.Microsecond, false, "below Redis resolution"},
		{0, false, "zero"},
		{-time.Second, false, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkTTL(tt.ttl, defaultDriftFactor)
			if tt.ok && err != nil {
				t.Fatalf("checkTTL(%s) = %v, want nil", tt.ttl, err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidTTL) {
				t.Fatalf("checkTTL(%s) = %v, want ErrInvalidTTL", tt.ttl, err)
			}
		})
	}
}

func TestQuorumAndDecision(t *testing.T) {
	tests := []struct {
		nodes, quorum int
		// decided for (ok, others)
		decided, undecided [][2]int
	}{
		{1, 1, [][2]int{{1, 0}, {0, 1}}, [][2]int{{0, 0}}},
		{3, 2, [][2]int{{2, 0}, {0, 2}, {2, 1}}, [][2]int{{1, 1}, {1, 0}, {0, 1}}},
		{4, 3, [][2]int{{3, 0}, {0, 2}, {1, 2}}, [][2]int{{2, 1}, {2, 0}, {0, 1}}},
		{5, 3, [][2]int{{3, 0}, {0, 3}, {2, 3}, {3, 2}}, [][2]int{{2, 2}, {0, 2}, {2, 0}}},
	}
	for _, tt := range tests {
		c := &Client{}
		c.nodes.init(make([]Conn, tt.nodes), 0)
		if c.quorum != tt.quorum {
			t.Errorf("%d nodes: quorum %d, want %d", tt.nodes, c.quorum, tt.quorum)
		}
		for _, d := range tt.decided {
			if !c.decided(d[0], d[1]) {
				t.Errorf("%d nodes: ok=%d others=%d should be decided", tt.nodes, d[0], d[1])
			}
		}
		for _, d := range tt.undecided {
			if c.decided(d[0], d[1]) {
				t.Errorf("%d nodes: ok=%d others=%d should not be decided", tt.nodes, d[0], d[1])
			}
		}
	}
}

func TestRetryStrategies(t *testing.T) {
	j := Jittered(10*time.Millisecond, 20*time.Millisecond)
	for i := 2; i < 100; i++ {
		d, ok := j.NextDelay(i)
		if !ok || d < 10*time.Millisecond || d > 20*time.Millisecond {
			t.Fatalf("Jittered: attempt %d: %s %v", i, d, ok)
		}
	}
	e := ExponentialJitter(10*time.Millisecond, 80*time.Millisecond)
	for attempt, max := range map[int]time.Duration{2: 10 * time.Millisecond, 3: 20 * time.Millisecond, 5: 80 * time.Millisecond, 50: 80 * time.Millisecond} {
		for range 50 {
			d, ok := e.NextDelay(attempt)
			if !ok || d < max/2 || d > max {
				t.Fatalf("ExponentialJitter: attempt %d: %s, want in [%s, %s]", attempt, d, max/2, max)
			}
		}
	}
	l := LimitAttempts(j, 3)
	if _, ok := l.NextDelay(3); !ok {
		t.Error("LimitAttempts(3) refused attempt 3")
	}
	if _, ok := l.NextDelay(4); ok {
		t.Error("LimitAttempts(3) allowed attempt 4")
	}
}

func TestTokenTTL_foreignTokens(t *testing.T) {
	for _, tok := range []string{"", "e1f2a3", "uuid-like-4f1c", "x.", "x.0", "x.-5", "x.1s", "a.b"} {
		if ttl, ok := tokenTTL(tok); ok {
			t.Errorf("tokenTTL(%q) = %s, true; want none", tok, ttl)
		}
	}
}

func TestAttemptStrings(t *testing.T) {
	seen := map[string]bool{}
	now := time.UnixMicro(1_700_000_000_123_456)
	for i := range 1000 {
		key := strings.Repeat("k", i%200) // past the stack buffer, too
		tok, fenceKey, clock, queue, deadlines := attemptStrings(key, now, time.Second, "", i%2 == 0)
		if len(tok) != 27+len(".1000") || !strings.HasSuffix(tok, ".1000") || seen[tok] {
			t.Fatalf("token %q: length %d, seen before %v", tok, len(tok), seen[tok])
		}
		if ttl, ok := tokenTTL(tok); !ok || ttl != time.Second {
			t.Fatalf("tokenTTL(%q) = %s, %v; want 1s", tok, ttl, ok)
		}
		seen[tok] = true
		if fenceKey != FenceKey(key) || clock != "1700000000123456" {
			t.Fatalf("attemptStrings(%q) = %q, %q; want %q, %q", key, fenceKey, clock, FenceKey(key), "1700000000123456")
		}
		wantQueue, wantDeadlines := "", ""
		if i%2 == 0 {
			wantQueue, wantDeadlines = QueueKeys(key)
		}
		if queue != wantQueue || deadlines != wantDeadlines {
			t.Fatalf("attemptStrings(%q) queue keys %q, %q; want %q, %q", key, queue, deadlines, wantQueue, wantDeadlines)
		}
	}
}

func TestReleaseStrings(t *testing.T) {
	now := time.UnixMicro(1_700_000_000_123_456)
	for _, key := range []string{"k", strings.Repeat("k", 300)} {
		for _, l := range []layout{{}, {cluster: true}} {
			channel, clock, queue, deadlines := releaseStrings(key, now, l.tag(key))
			wantQueue, wantDeadlines := QueueKeys(key)
			if l.cluster {
				tag := l.tag(key)
				wantQueue, wantDeadlines = queuePrefix+tag+key, queueDeadlinePrefix+tag+key
			}
			if channel+key != l.releaseChannel(key) || clock != "1700000000123456" || queue != wantQueue || deadlines != wantDeadlines {
				t.Fatalf("releaseStrings(%q, cluster %v) = %q, %q, %q, %q", key, l.cluster, channel, clock, queue, deadlines)
			}
		}
	}
}

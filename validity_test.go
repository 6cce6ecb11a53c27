package redlock

import (
	"errors"
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
		c := &Client{conns: make([]Conn, tt.nodes), quorum: quorumOf(tt.nodes)}
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

package wire

import (
	"strings"
	"testing"
	"time"
)

func TestTokenTTL_foreignTokens(t *testing.T) {
	for _, tok := range []string{"", "e1f2a3", "uuid-like-4f1c", "x.", "x.0", "x.-5", "x.1s", "a.b"} {
		if ttl, ok := TokenTTL(tok); ok {
			t.Errorf("TokenTTL(%q) = %s, true; want none", tok, ttl)
		}
	}
}

func TestAttemptStrings(t *testing.T) {
	seen := map[string]bool{}
	now := time.UnixMicro(1_700_000_000_123_456)
	for i := range 1000 {
		key := strings.Repeat("k", i%200) // past the stack buffer, too
		tok, fenceKey, clock, queue, deadlines := AttemptStrings(key, now, time.Second, "", i%2 == 0)
		if len(tok) != 27+len(".1000") || !strings.HasSuffix(tok, ".1000") || seen[tok] {
			t.Fatalf("token %q: length %d, seen before %v", tok, len(tok), seen[tok])
		}
		if ttl, ok := TokenTTL(tok); !ok || ttl != time.Second {
			t.Fatalf("TokenTTL(%q) = %s, %v; want 1s", tok, ttl, ok)
		}
		seen[tok] = true
		if fenceKey != FenceKey(key) || clock != "1700000000123456" {
			t.Fatalf("AttemptStrings(%q) = %q, %q; want %q, %q", key, fenceKey, clock, FenceKey(key), "1700000000123456")
		}
		wantQueue, wantDeadlines := "", ""
		if i%2 == 0 {
			wantQueue, wantDeadlines = QueueKeys(key)
		}
		if queue != wantQueue || deadlines != wantDeadlines {
			t.Fatalf("AttemptStrings(%q) queue keys %q, %q; want %q, %q", key, queue, deadlines, wantQueue, wantDeadlines)
		}
	}
}

func TestReleaseStrings(t *testing.T) {
	now := time.UnixMicro(1_700_000_000_123_456)
	for _, key := range []string{"k", strings.Repeat("k", 300)} {
		for _, l := range []Layout{{}, {Cluster: true}} {
			channel, clock, queue, deadlines := ReleaseStrings(key, now, l.Tag(key))
			wantQueue, wantDeadlines := QueueKeys(key)
			if l.Cluster {
				tag := l.Tag(key)
				wantQueue, wantDeadlines = QueuePrefix+tag+key, QueueDeadlinePrefix+tag+key
			}
			if channel+key != l.ReleaseChannel(key) || clock != "1700000000123456" || queue != wantQueue || deadlines != wantDeadlines {
				t.Fatalf("ReleaseStrings(%q, cluster %v) = %q, %q, %q, %q", key, l.Cluster, channel, clock, queue, deadlines)
			}
		}
	}
}

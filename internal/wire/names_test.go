package wire

import (
	"strings"
	"testing"
	"time"
)

func TestParseToken_foreignTokens(t *testing.T) {
	for _, tok := range []string{"", "e1f2a3", "uuid-like-4f1c", "x.", "x.0", "x.-5", "x.1s", "a.b", "x.5+", "x.+5", "x.5+-1", "x.9300000000000", "x.1000+9300000000000", "x.1.h.1000+9223372036855"} {
		if info, ok := ParseToken(tok); ok {
			t.Errorf("ParseToken(%q) = %+v, true; want nothing", tok, info)
		}
	}
	// The longest a time.Duration holds still parses.
	if info, ok := ParseToken("x.9223372036854+9223372036854"); !ok || info.TTL != 9223372036854*time.Millisecond || info.Delay != info.TTL {
		t.Errorf("ParseToken of the largest TTL and delay = %+v, %v", info, ok)
	}
}

func TestAttemptStrings(t *testing.T) {
	seen := map[string]bool{}
	now := time.UnixMicro(1_700_000_000_123_456)
	for i := range 1000 {
		key := strings.Repeat("k", i%200) // past the stack buffer, too
		owner := "host.example:42"
		tok, fenceKey, clock, queue, deadlines, waiting := AttemptStrings(key, now, time.Second, 0, owner, "", i%2 == 0)
		suffix := ".1700000000123456.host.example:42.1000"
		if len(tok) != 27+len(suffix) || !strings.HasSuffix(tok, suffix) || seen[tok] {
			t.Fatalf("token %q: length %d, seen before %v", tok, len(tok), seen[tok])
		}
		if info, ok := ParseToken(tok); !ok || info.Owner != owner || !info.Granted.Equal(now) || info.TTL != time.Second || info.Delay != 0 {
			t.Fatalf("ParseToken(%q) = %+v, %v; want owner %q, granted %s", tok, info, ok, owner, now)
		}
		seen[tok] = true
		if fenceKey != FenceKey(key) || clock != "1700000000123456" {
			t.Fatalf("AttemptStrings(%q) = %q, %q; want %q, %q", key, fenceKey, clock, FenceKey(key), "1700000000123456")
		}
		wantQueue, wantDeadlines, wantWaiting := "", "", ""
		if i%2 == 0 {
			wantQueue, wantDeadlines = QueueKeys(key)
			wantWaiting = WaitingPrefix + key
		}
		if queue != wantQueue || deadlines != wantDeadlines || waiting != wantWaiting {
			t.Fatalf("AttemptStrings(%q) queue keys %q, %q, %q; want %q, %q, %q", key, queue, deadlines, waiting, wantQueue, wantDeadlines, wantWaiting)
		}
	}
	tok, _, _, _, _, _ := AttemptStrings("k", now, time.Second, 5*time.Second, "o", "", false)
	if info, ok := ParseToken(tok); !ok || !strings.HasSuffix(tok, ".o.1000+5000") || info.TTL != time.Second || info.Delay != 5*time.Second {
		t.Errorf("token %q with a 5s lock-delay: ParseToken = %+v, %v", tok, info, ok)
	}
}

func TestReleaseStrings(t *testing.T) {
	now := time.UnixMicro(1_700_000_000_123_456)
	for _, key := range []string{"k", strings.Repeat("k", 300)} {
		for _, l := range []Layout{{}, {Cluster: true}} {
			channel, clock, queue, deadlines, waiting := ReleaseStrings(key, now, l.Tag(key))
			tag := l.Tag(key)
			wantQueue, wantDeadlines, wantWaiting := QueuePrefix+tag+key, QueueDeadlinePrefix+tag+key, WaitingPrefix+tag+key
			if channel+key != l.ReleaseChannel(key) || clock != "1700000000123456" || queue != wantQueue || deadlines != wantDeadlines || waiting != wantWaiting {
				t.Fatalf("ReleaseStrings(%q, cluster %v) = %q, %q, %q, %q, %q", key, l.Cluster, channel, clock, queue, deadlines, waiting)
			}
		}
	}
}

func TestParseToken_shapes(t *testing.T) {
	random := strings.Repeat("A", 27)
	for _, c := range []struct {
		token, owner string
		us           int64
		ttl          time.Duration
		ok           bool
	}{
		{random + ".1000", "", 0, time.Second, true},                          // before owners
		{random + ".17.a.b.c.250", "a.b.c", 17, 250 * time.Millisecond, true}, // dots in the owner
		{random + ".x.owner.250", "", 0, 250 * time.Millisecond, true},        // no grant time
		{random + "..250", "", 0, 250 * time.Millisecond, true},               // no owner
		{random + ".17.o.250+5000", "o", 17, 250 * time.Millisecond, true},    // a lock-delay
		{random + ".17.o.250+x", "", 0, 0, false},
		{random + ".17.o.250+0", "", 0, 0, false},
		{"uuid-like-4f1c", "", 0, 0, false}, // another library's
		{"a.b", "", 0, 0, false},
	} {
		info, ok := ParseToken(c.token)
		if ok != c.ok || info.Owner != c.owner || info.TTL != c.ttl || (c.us != 0) != !info.Granted.IsZero() || (c.us != 0 && info.Granted.UnixMicro() != c.us) {
			t.Errorf("ParseToken(%q) = %+v, %v; want owner %q, granted %d µs, TTL %s, %v", c.token, info, ok, c.owner, c.us, c.ttl, c.ok)
		}
	}
}

func TestCheckOwner(t *testing.T) {
	for _, bad := range []string{"", "a b", "tab\there", "é", "new\nline", strings.Repeat("o", MaxOwnerBytes+1)} {
		if CheckOwner(bad) == "" {
			t.Errorf("CheckOwner(%q) accepted it", bad)
		}
		if got := SanitizeOwner(bad); CheckOwner(got) != "" {
			t.Errorf("SanitizeOwner(%q) = %q, which CheckOwner refuses", bad, got)
		}
	}
	for bad, says := range map[string]string{"é": `byte 0 is the first of 'é', not ASCII`, "a\xffb": `byte 1 is 0xff, not ASCII`, "a b": `byte 1 is ' '`} {
		if msg := CheckOwner(bad); !strings.HasPrefix(msg, says+":") {
			t.Errorf("CheckOwner(%q) = %q, want it to begin %q", bad, msg, says)
		}
	}
	for _, good := range []string{"host:1234", "svc/worker-1@host.example", strings.Repeat("o", MaxOwnerBytes)} {
		if msg := CheckOwner(good); msg != "" {
			t.Errorf("CheckOwner(%q) = %q", good, msg)
		}
	}
}

// ScanPattern escapes Redis's glob characters and keeps every other byte
// as it is, valid UTF-8 or not.
func TestScanPattern(t *testing.T) {
	for prefix, want := range map[string]string{
		"":            "*",
		"jobs:":       "jobs:*",
		`a*b?c[d]e\f`: `a\*b\?c\[d\]e\\f*`,
		"bin:\xff":    "bin:\xff*",
		"é":           "é*",
	} {
		if got := ScanPattern(prefix); got != want {
			t.Errorf("ScanPattern(%q) = %q, want %q", prefix, got, want)
		}
	}
}

package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redlock-go/redlock"
)

// sinceLayout prints when a grant began: UTC, to the millisecond.
const sinceLayout = "2006-01-02T15:04:05.000Z07:00"

// grantJSON is who holds a grant and since when, in JSON.
type grantJSON struct {
	Token string `json:"token"`
	Owner string `json:"owner"` // "" when the token does not say
	Since string `json:"since"` // RFC 3339, UTC; "" when the token does not say
	AgeMs int64  `json:"age_ms"`
}

// newGrantJSON describes the grant of token.
func newGrantJSON(token string) grantJSON {
	g := redlock.TokenGrant(token)
	return grantJSON{Token: token, Owner: g.Owner, Since: sinceText(g.Since), AgeMs: ageOf(g.Since).Milliseconds()}
}

// grantsJSON describes the grants of tokens, never nil.
func grantsJSON(tokens []string) []grantJSON {
	out := []grantJSON{}
	for _, token := range tokens {
		out = append(out, newGrantJSON(token))
	}
	return out
}

// sinceText prints since, "" when zero.
func sinceText(since time.Time) string {
	if since.IsZero() {
		return ""
	}
	return since.UTC().Format(sinceLayout)
}

// ageOf returns how long ago since was, by this host's clock; 0 when since
// is zero or ahead.
func ageOf(since time.Time) time.Duration {
	if since.IsZero() {
		return 0
	}
	return max(time.Since(since), 0)
}

// ownerText describes who holds the grant of token and since when:
// "owner web-1:42 since 2026-01-02T03:04:05.678Z (1.5s ago)", or "" for a
// token that does not say (another library's).
func ownerText(token string) string {
	g := redlock.TokenGrant(token)
	if g.Owner == "" {
		return ""
	}
	return fmt.Sprintf("owner %s since %s (%s ago)", g.Owner, sinceText(g.Since), ageOf(g.Since).Round(time.Millisecond))
}

// withOwner returns ", " and ownerText(token), or "" for a token that
// does not say.
func withOwner(token string) string {
	if s := ownerText(token); s != "" {
		return ", " + s
	}
	return ""
}

// ownerColumn renders the owner of token for a table: "-" when the token
// does not say.
func ownerColumn(token string) string {
	if g := redlock.TokenGrant(token); g.Owner != "" {
		return shown(g.Owner)
	}
	return "-"
}

// sinceColumn renders when the grant of token began for a table: "-"
// when the token does not say.
func sinceColumn(token string) string {
	if g := redlock.TokenGrant(token); !g.Since.IsZero() {
		return sinceText(g.Since)
	}
	return "-"
}

// writeForced says, for inspect, who forced the lock free (release
// --force) and when, by the first node that keeps the record; nothing
// when none does.
func writeForced(w io.Writer, states []redlock.NodeState) {
	for _, st := range states {
		if st.Err == nil && st.ForcedBy != "" {
			fmt.Fprintf(w, "forced free by %s at %s, from %s\n", st.ForcedBy, sinceText(st.ForcedAt), strings.Join(st.ForcedTokens, ", "))
			return
		}
	}
}

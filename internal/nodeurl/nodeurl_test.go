package nodeurl

import (
	"errors"
	"strings"
	"testing"
)

// A password with '#', '/' or '?' unencoded is refused, and no part of it
// shows in the error; URLs with an '@' only in the userinfo parse.
func TestParse_unencodedPassword(t *testing.T) {
	for _, raw := range []string{
		"redis://:Sup3rSecret#tail@127.0.0.1:27105",
		"redis://:90210#Secret@127.0.0.1:27105",
		"redis://:4242#Secret@127.0.0.1:27105",
		"rediss://user:Sup3r/Secret@host:6379/0",
		"redis://:Sup3r?Secret@host",
		"redis://user:4242?Secret@host",
		"user:4242/Secret@host:6379",
		":4242#Secret@host:6379",
		"unix://user:4242/Secret@/tmp/r.sock",
		"unix://:4242#Secret@/tmp/r.sock",
		"redis://host:6379/0?client_name=a#Secret",
		"redis://host:6379?password=4242#Secret",
	} {
		_, err := Parse(raw)
		if !errors.Is(err, ErrInvalidURL) {
			t.Errorf("Parse(%q): %v, want ErrInvalidURL", raw, err)
			continue
		}
		for _, part := range []string{"Sup3r", "Secret", "tail", "90210", "4242"} {
			if strings.Contains(err.Error(), part) {
				t.Errorf("Parse(%q): the error shows %q: %v", raw, part, err)
			}
		}
	}
	for _, raw := range []string{
		"redis://:s3cret@host:6379/0",
		"redis://user:pa%23ss%2Fw%3Fd%40@host:6379",
		"redis://:sp@s1:26379?master_name=m&password=s3cret",
		"unix://:pass@/tmp/redis@1.sock",
		"unix:///tmp/redis@1.sock",
		"redis://s1:26379?master_name=m&sentinel_password=p@ss",
		"redis://:pw@s1:26379?master_name=m&password=p@ss",
		"redis://host:6379/0?client_name=svc@h",
		"redis://[::1]:6379?cluster=1&addr=[::1]:6380",
	} {
		if _, err := Parse(raw); err != nil {
			t.Errorf("Parse(%q): %v", raw, err)
		}
	}
}

// An empty URL, or one without a host, says so, as written.
func TestParse_emptyURL(t *testing.T) {
	for raw, want := range map[string]string{
		"":         "redlock: invalid node URL: an empty URL (a list with a comma too many?)",
		" ":        "redlock: invalid node URL: an empty URL (a list with a comma too many?)",
		"redis://": "redlock: invalid node URL: redis://: no host",
	} {
		if _, err := Parse(raw); !errors.Is(err, ErrInvalidURL) || err.Error() != want {
			t.Errorf("Parse(%q): %v, want %q", raw, err, want)
		}
	}
}

// A cluster parameter that says no is refused: its mere presence names a
// Redis Cluster, so cluster=0 would mean the opposite of what it says.
func TestParse_clusterParameterSaysYes(t *testing.T) {
	for _, yes := range []string{"cluster", "cluster=", "cluster=1", "cluster=true", "cluster=YES"} {
		if _, err := Parse("redis://127.0.0.1:6379?" + yes); err != nil {
			t.Errorf("?%s: %v", yes, err)
		}
	}
	for _, no := range []string{"cluster=0", "cluster=false", "cluster=no", "cluster=maybe"} {
		if _, err := Parse("redis://127.0.0.1:6379?" + no); !errors.Is(err, ErrInvalidURL) {
			t.Errorf("?%s: %v, want ErrInvalidURL", no, err)
		}
	}
}

// A scheme that lost its colon is said so, with the URL as it should be
// (its password hidden), not taken for a password to encode or a host
// named "redis".
func TestParse_schemeWithoutItsColon(t *testing.T) {
	for raw, want := range map[string]string{
		"redis//127.0.0.1:6379":          "redis//…: the scheme lacks its ':': write redis://127.0.0.1:6379",
		"rediss//:s3cret@127.0.0.1:6380": "rediss//…: the scheme lacks its ':': write rediss://:xxxxx@127.0.0.1:6380",
		"unix///tmp/redis.sock":          "unix//…: the scheme lacks its ':': write unix:///tmp/redis.sock",
	} {
		_, err := Parse(raw)
		if !errors.Is(err, ErrInvalidURL) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q): %v, want %q", raw, err, want)
		}
	}
}

// A URL that names no host before its port, a negative or non-numeric
// database, or a fragment is refused, saying which: go-redis took the
// first for this machine and a negative database for database 0.
func TestParse_noHostNegativeDatabaseFragment(t *testing.T) {
	for raw, want := range map[string]string{
		"redis://:6379":                       "no host before the port in :6379: write 127.0.0.1:6379",
		"redis://:pw@:6379":                   "no host before the port",
		"redis://h:6379?cluster=1&addr=:6380": "no host before the port in :6380",
		"redis://127.0.0.1:6379/-1":           `database "-1" is not a number from 0`,
		"rediss://127.0.0.1:6379/x":           `database "x" is not a number from 0`,
		"redis://127.0.0.1:6379/3?db=-2":      `database "-2" is not a number from 0`,
		"unix:///tmp/redis.sock?db=-1":        `database "-1" is not a number from 0`,
		"unix://tmp/redis.sock":               `a unix socket's URL has no host ("tmp")`,
		"unix://127.0.0.1:6379/tmp/r.sock":    `a unix socket's URL has no host ("127.0.0.1:6379")`,
		"unix://":                             "no socket path",
		"unix:":                               "write a socket's absolute path after unix://",
		"unix:///tmp/dir/":                    "/tmp/dir/ ends in '/', a directory",
		"unix:sock/r.sock":                    "write a socket's absolute path after unix://",
		"redis://127.0.0.1:6379#primary":      "redis://127.0.0.1:6379#…: a '#' ends a URL, and a fragment is no part of a node URL",
	} {
		_, err := Parse(raw)
		if !errors.Is(err, ErrInvalidURL) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidURL saying %q", raw, err, want)
		}
	}
	for _, raw := range []string{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/", "unix:///tmp/redis.sock?db=2"} {
		if _, err := Parse(raw); err != nil {
			t.Errorf("Parse(%q): %v", raw, err)
		}
	}
}

// A query parameter that is not URL-encoded, a password with a bare %
// say, is refused: url.URL.Query drops it without a word, and the node
// then refused the credentials it never got. The message shows no part of
// the password.
func TestParse_queryNotEncoded(t *testing.T) {
	for _, raw := range []string{
		"redis://127.0.0.1:26379?master_name=m&password=s3cr%zzPW",
		"redis://127.0.0.1:26379?master_name=m&sentinel_password=s3cr%PW",
		"redis://127.0.0.1:6379?db=1%",
	} {
		_, err := Parse(raw)
		if !errors.Is(err, ErrInvalidURL) || !strings.Contains(err.Error(), "a query parameter is not URL-encoded: write a % in a value as %25") {
			t.Errorf("Parse(%q) = %v, want ErrInvalidURL saying the query is not URL-encoded", raw, err)
		}
		if err != nil && (strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "zzPW")) {
			t.Errorf("Parse(%q) = %v: the password shows", raw, err)
		}
	}
	if _, err := Parse("redis://127.0.0.1:26379?master_name=m&password=s3cr%25PW"); err != nil {
		t.Errorf("an encoded %%: %v", err)
	}
}

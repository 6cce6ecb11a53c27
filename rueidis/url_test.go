package rueidis_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/rueidis"
)

// The forms of node URL goredis takes name the same nodes, of the same
// kind, with rueidis: a program can switch adapters without rewriting its
// URLs, or its logs' node names. NewURL does no I/O: none of these hosts
// exists.
func TestNewURL_sameFormsAsGoredis(t *testing.T) {
	for _, raw := range []string{
		"redis://:s3cret@node-a:6380/2",
		"redis://node-a",
		"redis://node-a:6379/",
		"redis://node-a/?dial_timeout=2s",
		"rediss://user:s3cret@node-a:6380?dial_timeout=2s&write_timeout=1s",
		"unix://:s3cret@/var/run/redis.sock?db=1",
		"redis://:s3cret@sentinel-a:26379/0?master_name=locks&addr=sentinel-b:26379&password=m4ster",
		"redis://:s3cret@10.0.0.1:6379?cluster=1&addr=10.0.0.2:6379&addr=10.0.0.3:6379",
		"redis://[::1]:7000?cluster=yes",
	} {
		r, err := rueidis.NewURL(raw)
		if err != nil {
			t.Errorf("rueidis.NewURL(%q): %v", raw, err)
			continue
		}
		g, err := goredis.NewURL(raw)
		if err != nil {
			t.Fatalf("goredis.NewURL(%q): %v", raw, err)
		}
		if r.Name() != g.Name() || r.IsCluster() != g.IsCluster() {
			t.Errorf("%q: rueidis names %q (cluster %v), goredis %q (cluster %v)", raw, r.Name(), r.IsCluster(), g.Name(), g.IsCluster())
		}
		if strings.Contains(r.Name(), "s3cret") || strings.Contains(r.Name(), "m4ster") {
			t.Errorf("%q: the name %q shows a password", raw, r.Name())
		}
		if r.Client() != nil {
			t.Errorf("%q: a client before first use", raw)
		}
		r.Close()
		g.Close()
	}
}

// URLs this adapter cannot follow as written are refused, wrapping
// ErrInvalidURL and saying why, without the password.
func TestNewURL_refusals(t *testing.T) {
	for raw, why := range map[string]string{
		"redis://:s3cret@s1:26379?master_set=locks":          "master_name",
		"redis://:s3cret@s1:26379?master_name=":              "master_name is empty",
		"redis://:s3cret@h:6379?master_name=locks&cluster=1": "exclude",
		"redis://:s3cret@h:6379?pool_size=10":                "unknown parameter pool_size",
		"redis://:s3cret@h:6379?addr=h2:6379":                "unknown parameter addr",
		"redis://:s3cret@h:6379?client_cache=1":              "unknown parameter client_cache",
		"unix://:s3cret@/tmp/redis.sock?cluster=1":           "unix socket",
		"unix://:s3cret@":                                    "no socket path",
		"redis://:s3cret@h:6379/0/1":                         "invalid URL path",
	} {
		_, err := rueidis.NewURL(raw)
		if !errors.Is(err, rueidis.ErrInvalidURL) || !strings.Contains(err.Error(), why) {
			t.Errorf("NewURL(%q) = %v, want ErrInvalidURL saying %q", raw, err, why)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NewURL(%q) error shows the password: %v", raw, err)
		}
	}
	if !errors.Is(rueidis.ErrInvalidURL, goredis.ErrInvalidURL) {
		t.Error("the adapters' ErrInvalidURL differ")
	}
}

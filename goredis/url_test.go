package goredis_test

import (
	"testing"

	"github.com/redlock-go/redlock/goredis"
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

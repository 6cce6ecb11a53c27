package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock/bench/internal/delayproxy"
)

func TestMain(m *testing.M) {
	delayproxy.RunIfChild() // the -lan-delay proxy runs as a copy of the test binary
	os.Exit(m.Run())
}

// TestRun_everyNodeRunsEveryRequest runs one short round on two nodes
// behind a delay: each kind's commands per cycle are those of one node
// times two, which a fan-out that skipped a node, or counted one node
// only, would not show.
func TestRun_everyNodeRunsEveryRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, "redis-server", 2, 100*time.Microsecond, 50, 1); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "2 node(s) behind a delay of 100µs each way") {
		t.Errorf("the header does not say how the nodes were reached:\n%s", text)
	}
	want := map[string]string{
		"this library: every guarantee (Acquire, Release)": "4.00 FCALL, 4.00 MGET, 4.00 SET, 2.00 DEL, 2.00 TIME",
		"plain SET NX PX, DEL":                             "2.00 DEL, 2.00 SET",
	}
	for kind, commands := range want {
		row := rowOf(text, kind)
		if !strings.HasSuffix(row, "| "+commands+" |") {
			t.Errorf("%s: got row %q, want commands %q", kind, row, commands)
		}
	}
}

// rowOf returns the first table row of text that starts with kind.
func rowOf(text, kind string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "| "+kind+" |") {
			return line
		}
	}
	return ""
}

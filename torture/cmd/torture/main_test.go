package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/torture/traffic"
)

func TestMain(m *testing.M) {
	traffic.RunIfWorker()
	os.Exit(m.Run())
}

func TestRun_usage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-list"}, 0, "clock-jump"},
		{[]string{"-list", "-scenario", "^eviction"}, 0, "eviction/write-fenced"},
		{[]string{"-scenario", "no-such"}, 2, "no scenario matches"},
		{[]string{"-scenario", "("}, 2, "error parsing regexp"},
		{[]string{"extra"}, 2, "unexpected arguments"},
		{[]string{"-nope"}, 2, "flag provided but not defined"},
	} {
		var out, errOut bytes.Buffer
		code := run(t.Context(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.want) {
			t.Errorf("run(%q) = %d, output %q %q; want %d and %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.want)
		}
	}
}

func TestRun_oneScenarioWritesTheReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for a few seconds; skipped with -short")
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"-scenario", "^no-faults$", "-duration", "1s", "-seed", "7", "-report", dir}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "no-faults") || !strings.Contains(out.String(), "PASS") {
		t.Fatalf("table:\n%s", out.String())
	}
	for _, name := range []string{"index.html", "table.md", "no-faults.jsonl"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if !strings.Contains(string(page), "go run ./cmd/torture -seed 7 -scenario &#39;^no-faults$&#39; -duration 1s") {
		t.Errorf("the report does not say how to reproduce the run")
	}
}

func TestRun_interruptedRunFails(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-scenario", "^no-faults$", "-report", ""}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d after an interrupt, want 1\n%s", code, errOut.String())
	}
}

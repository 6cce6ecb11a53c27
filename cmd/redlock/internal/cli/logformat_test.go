package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// logRecord is one record of --log-format json.
type logRecord struct {
	Time  string            `json:"time"`
	Level string            `json:"level"`
	Msg   string            `json:"msg"`
	Cmd   string            `json:"cmd"`
	Usage string            `json:"usage"`
	Nodes []json.RawMessage `json:"nodes"`
}

// jsonRecords parses every line of stderr but those in raw, which are the
// command's own output, as a record of the command cmd, and fails the test
// on a line that is not one.
func jsonRecords(t *testing.T, stderr, cmd string, raw ...string) []logRecord {
	t.Helper()
	var records []logRecord
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if line == "" || containsString(raw, line) {
			continue
		}
		var r logRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Time == "" || r.Level == "" || r.Msg == "" || r.Cmd != cmd {
			t.Errorf("not a JSON record of %q: %s", cmd, line)
			continue
		}
		if strings.HasPrefix(r.Msg, "redlock "+cmd+": ") {
			t.Errorf("the record keeps the text's prefix: %s", line)
		}
		records = append(records, r)
	}
	return records
}

func containsString(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// findRecord returns the first record at level whose message starts with
// prefix, and whether there is one.
func findRecord(records []logRecord, level, prefix string) (logRecord, bool) {
	for _, r := range records {
		if r.Level == level && strings.HasPrefix(r.Msg, prefix) {
			return r, true
		}
	}
	return logRecord{}, false
}

// With --log-format json, everything the command itself writes on stderr
// is a JSON record: its messages each at its level, the library's records,
// usage errors and the telemetry's complaints; the output of the command
// 'redlock run' runs is left as it is.
func TestLogFormat_json(t *testing.T) {
	fresh := newFreshCluster(t, 3)
	r := cli(t, "acquire", "--nodes", strings.Join(fresh.URLs(), ","), "--log-format", "json", "--log-level", "info",
		"--wait", "0", "k").expect(t, exitUnavailable, "acquire on brand-new nodes")
	records := jsonRecords(t, r.stderr, "acquire")
	if _, ok := findRecord(records, "INFO", "redlock: node recovering"); !ok {
		t.Errorf("no library record of a recovering node:\n%s", r.stderr)
	}
	if fail, ok := findRecord(records, "ERROR", "not acquired"); !ok || len(fail.Nodes) != 3 {
		t.Errorf("no failure record with the 3 nodes' outcomes:\n%s", r.stderr)
	}

	_, nodes := newCluster(t, 3)
	cli(t, "acquire", "--nodes", nodes, "busy").expect(t, exitOK, "acquire busy")
	r = cli(t, "acquire", "--nodes", nodes, "--log-format=json", "--wait", "300ms", "busy").expect(t, exitConflict, "acquire busy again")
	records = jsonRecords(t, r.stderr, "acquire")
	if _, ok := findRecord(records, "INFO", `waiting for "busy"`); !ok {
		t.Errorf("no record of the wait:\n%s", r.stderr)
	}

	t.Run("run", func(t *testing.T) {
		r := cli(t, "run", "--nodes", nodes, "--log-format", "json", "--verbose", "job", "--",
			"sh", "-c", "echo 'plain text of the command' >&2").expect(t, exitOK, "run --verbose")
		if !strings.Contains(r.stderr, "\nplain text of the command\n") && !strings.HasPrefix(r.stderr, "plain text of the command\n") {
			t.Errorf("the command's own stderr was changed:\n%s", r.stderr)
		}
		records := jsonRecords(t, r.stderr, "run", "plain text of the command")
		for _, prefix := range []string{`acquired "job"`, `released lock "job"`} {
			if _, ok := findRecord(records, "INFO", prefix); !ok {
				t.Errorf("no INFO record %q:\n%s", prefix, r.stderr)
			}
		}
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"acquire", "--log-format", "json", "--bogus", "k"},
			{"acquire", "--log-format", "json", "-n", "-w", "1", "k"},
			{"acquire", "--log-format", "json", "k", "k"},
		} {
			r := cli(t, args...).expect(t, exitUsage, strings.Join(args, " "))
			records := jsonRecords(t, r.stderr, "acquire")
			if len(records) != 1 || records[0].Level != "ERROR" || records[0].Usage != "redlock help acquire" {
				t.Errorf("redlock %s: want one ERROR record pointing at the help:\n%s", strings.Join(args, " "), r.stderr)
			}
		}
		r := cli(t, "acquire", "--log-format", "xml", "k").expect(t, exitUsage, "--log-format xml")
		if !strings.Contains(r.stderr, "want text or json") {
			t.Errorf("--log-format xml:\n%s", r.stderr)
		}
	})
	t.Run("telemetry", func(t *testing.T) {
		cmd := binaryCommand(nodes, "acquire", "--log-format", "json", "--metrics", "otlp", "--wait", "0", "otlp-job")
		cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+freeAddr(t))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("redlock acquire: %v\n%s", err, stderr.String())
		}
		if _, ok := findRecord(jsonRecords(t, stderr.String(), "acquire"), "WARN", "telemetry not exported: "); !ok {
			t.Errorf("no WARN record of the failed export:\n%s", stderr.String())
		}
	})
}

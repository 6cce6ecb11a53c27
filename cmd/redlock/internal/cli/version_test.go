package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The version names the module version, or the VCS revision and its time,
// as the toolchain recorded them; never the bare "(devel)" of a build from
// a checkout.
func TestVersion_namesTheModuleVersionOrTheRevision(t *testing.T) {
	const rev = "d496d34950166ff97f9b318ffa98667ee71d0fa0"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-26T14:32:32Z"},
			{Key: "vcs.modified", Value: modified},
		}
	}
	for _, tc := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"go install @version", "v1.2.0", nil, "v1.2.0, go1.26.0"},
		{"go build in a clone", "v0.0.0-20261126143232-d496d3495016", vcs("false"),
			"v0.0.0-20261126143232-d496d3495016, revision d496d3495016 of 2026-11-26T14:32:32Z, go1.26.0"},
		{"a modified clone, toolchain before module versions from VCS", "(devel)", vcs("true"),
			"revision d496d3495016 of 2026-11-26T14:32:32Z, modified, go1.26.0"},
		{"go run or -buildvcs=false", "(devel)", []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}},
			"unknown version (no module version or VCS revision recorded: built with go run, with -buildvcs=false, or outside a git clone), go1.26.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := &debug.BuildInfo{GoVersion: "go1.26.0", Settings: tc.settings,
				Main: debug.Module{Path: "github.com/redlock-go/redlock/cmd/redlock", Version: tc.version}}
			if got := versionOf(info); got != tc.want {
				t.Errorf("versionOf = %q\nwant          %q", got, tc.want)
			}
		})
	}
	if got := versionOf(nil); !strings.HasPrefix(got, "unknown version") {
		t.Errorf("versionOf(nil) = %q", got)
	}
}

// 'redlock version' prints what this binary recorded: a test binary has no
// module version nor revision, and says so rather than "(devel)".
func TestVersion_saysWhatIsUnknown(t *testing.T) {
	r := cli(t, "version").expect(t, exitOK, "version")
	if strings.Contains(r.stdout, "(devel)") || !strings.HasPrefix(r.stdout, "redlock ") ||
		!strings.HasSuffix(r.stdout, ", "+runtime.Version()+"\n") {
		t.Errorf("redlock version printed %q", r.stdout)
	}
}

// 'redlock version' takes no arguments: an extra one is a usage error, as
// for every other verb.
func TestVersion_refusesArguments(t *testing.T) {
	r := cli(t, "version", "extra").expect(t, exitUsage, "version extra")
	if r.stdout != "" || !strings.Contains(r.stderr, `takes no arguments, got ["extra"]`) {
		t.Errorf("redlock version extra: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

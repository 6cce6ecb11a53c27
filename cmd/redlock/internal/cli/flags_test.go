package cli

import (
	"slices"
	"strings"
	"testing"
)

// One-letter flags written together split as getopt splits them, and
// nothing past the flags changes: a command's own arguments stay as given.
func TestAttachedValues(t *testing.T) {
	fs := newFlagSet("run")
	runCommand().setup(fs)
	for _, tc := range []struct{ in, want string }{
		{"-nE0 key -- true", "-n -E 0 key -- true"},
		{"-w0.3 -E0 key -- true", "-w 0.3 -E 0 key -- true"},
		{"-nE 3 key -- true", "-n -E 3 key -- true"},
		{"-E=4 -n key", "-E=4 -n key"},
		{"--wait 5 -E9 key", "--wait 5 -E 9 key"},
		{"-w -1 -E0 key", "-w -1 -E 0 key"},
		{"-nx key", "-nx key"}, // no flag -x: Parse refuses -nx by its name
		{"key -- sh -c -nE0", "key -- sh -c -nE0"},
		{"-n -- -E0", "-n -- -E0"},
		{"-Ewn key", "-E wn key"},
	} {
		got := attachedValues(fs, strings.Fields(tc.in))
		if !slices.Equal(got, strings.Fields(tc.want)) {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

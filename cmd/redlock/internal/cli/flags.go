package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// defaulter is a flag.Value whose default needs words rather than its
// zero-argument String, such as "forever".
type defaulter interface {
	defaultText() string
}

// waitFlag is how long to wait for a lock: negative means forever, 0 means
// one attempt.
type waitFlag time.Duration

// waitForever is waitFlag's default.
const waitForever = waitFlag(-1)

func (w *waitFlag) String() string {
	if w == nil || *w < 0 {
		return "forever"
	}
	return time.Duration(*w).String()
}

func (w *waitFlag) Set(s string) error {
	if s == "forever" {
		*w = waitForever
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 0, 500ms, 30s or 5m, nor \"forever\"", s)
	}
	if d < 0 {
		return fmt.Errorf("%s is negative", s)
	}
	*w = waitFlag(d)
	return nil
}

func (w *waitFlag) defaultText() string { return "forever" }

// newFlagSet returns a FlagSet that reports errors instead of exiting and
// prints nothing itself: the caller prints help and errors.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// writeFlags prints every flag of fs, one per entry, each with its default.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if arg != "" {
			head += " " + arg
		}
		fmt.Fprintf(w, "%s\n", head)
		for _, line := range wrap(usage+" (default "+defaultText(f)+")", 72) {
			fmt.Fprintf(w, "        %s\n", line)
		}
	})
}

// defaultText renders a flag's default for the help text.
func defaultText(f *flag.Flag) string {
	if d, ok := f.Value.(defaulter); ok {
		return d.defaultText()
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		if f.DefValue == "true" {
			return "on"
		}
		return "off"
	}
	if f.DefValue == "" {
		return "none"
	}
	return f.DefValue
}

// wrap splits text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// setFlags returns the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

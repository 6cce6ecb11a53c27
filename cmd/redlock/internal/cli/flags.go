package cli

import (
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
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
	d, err := parseSeconds(s)
	switch {
	case err != nil:
		parsed := s
		if bareSeconds.MatchString(s) {
			parsed += "s"
		}
		return durationError(s, parsed, `a duration such as 0, 500ms, 30s or 5m, nor a number of seconds, nor "forever"`)
	case d < 0:
		return fmt.Errorf("%s is negative", s)
	}
	*w = waitFlag(d)
	return nil
}

func (w *waitFlag) defaultText() string { return "forever" }

// registerWait adds --wait to fs, stored in w, and flock's spellings of it:
// -w SECONDS and -n.
func registerWait(fs *flag.FlagSet, w *waitFlag) {
	fs.Var(w, "wait", "how long to wait for the lock, a `duration` or a bare number of seconds: "+
		"0 makes one attempt, \"forever\" never gives up; counted from the start, the first check of the nodes included")
	aliasVar(fs, "w", "wait", "", "flock's -w: --wait `SECONDS`")
	aliasVar(fs, "n", "wait", "0", "flock's -n: --wait 0, one attempt")
}

// bareSeconds matches a number without a unit, which flags that people
// think of in seconds take as seconds, as flock -w and timeout do: 30, 0.5;
// a negative one too, so that -1 is said to be negative, not no duration.
var bareSeconds = regexp.MustCompile(`^-?([0-9]+(\.[0-9]+)?|\.[0-9]+)$`)

// durationForm matches what time.ParseDuration parses, whatever its size:
// a value of this form that does not parse is too long.
var durationForm = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+$`)

// durationError is the error of s, a flag's value that is no duration:
// want says what it should be; parsed is s as it was parsed.
func durationError(s, parsed, want string) error {
	if durationForm.MatchString(parsed) {
		return fmt.Errorf("%q is too long: a duration is at most %dh (about 292 years)", s, math.MaxInt64/int64(time.Hour))
	}
	return fmt.Errorf("%q is not %s", s, want)
}

// parseSeconds parses a Go duration (500ms, 30s, 1m30s) or a bare number
// of seconds.
func parseSeconds(s string) (time.Duration, error) {
	if bareSeconds.MatchString(s) {
		s += "s"
	}
	return time.ParseDuration(s)
}

// secondsFlag is a duration flag that also takes a bare number of seconds,
// for the durations people think of in seconds (--ttl, --kill-grace,
// --recovery-delay): --ttl 30 is --ttl 30s.
type secondsFlag struct{ d *time.Duration }

// secondsVar defines a secondsFlag of fs, with default def, stored in d.
// usage names its argument `duration`, as a duration flag's would be named,
// and should say that a bare number is seconds.
func secondsVar(fs *flag.FlagSet, d *time.Duration, name string, def time.Duration, usage string) {
	*d = def
	fs.Var(secondsFlag{d}, name, usage)
}

func (f secondsFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f secondsFlag) Set(s string) error {
	d, err := parseSeconds(s)
	if err != nil {
		parsed := s
		if bareSeconds.MatchString(s) {
			parsed += "s"
		}
		return durationError(s, parsed, "a duration such as 500ms, 30s or 5m, nor a number of seconds")
	}
	*f.d = d
	return nil
}

// unitFlag is a duration flag that wants a unit: one whose values are
// milliseconds (--node-timeout, --retry-delay), where a bare number read as
// seconds would be a thousand times what was meant.
type unitFlag struct{ d *time.Duration }

// unitVar defines a unitFlag of fs, with default def, stored in d.
func unitVar(fs *flag.FlagSet, d *time.Duration, name string, def time.Duration, usage string) {
	*d = def
	fs.Var(unitFlag{d}, name, usage)
}

func (f unitFlag) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f unitFlag) Set(s string) error {
	if bareSeconds.MatchString(s) && s != "0" {
		return fmt.Errorf("%q has no unit: write %sms or %ss", s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return durationError(s, s, "a duration such as 50ms or 1s")
	}
	*f.d = d
	return nil
}

// alias is a flag that sets another one, its target, as a habit from
// another tool spells it: flock's -w SECONDS is --wait, -n is --wait 0,
// -E CODE is --conflict-exit-code. The help lists it under its target.
type alias struct {
	fs     *flag.FlagSet
	target string
	// fixed is the value a flag that takes none gives its target (-n:
	// "0"); "" passes the flag's argument on.
	fixed string
}

// aliasVar defines name as an alias of the flag target of fs, which must
// be defined already: with fixed "", -name VALUE is --target VALUE; else
// -name takes no value and is --target fixed.
func aliasVar(fs *flag.FlagSet, name, target, fixed, usage string) {
	fs.Var(&alias{fs: fs, target: target, fixed: fixed}, name, usage)
}

func (a *alias) String() string {
	if a == nil || a.fixed != "" {
		return "false" // a flag without a value, unset
	}
	return ""
}

func (a *alias) Set(s string) error {
	if a.fixed != "" {
		if s != "true" {
			return fmt.Errorf("takes no value: it is --%s %s", a.target, a.fixed)
		}
		s = a.fixed
	}
	return a.fs.Lookup(a.target).Value.Set(s)
}

// IsBoolFlag makes an alias with a fixed value a flag without a value.
func (a *alias) IsBoolFlag() bool { return a.fixed != "" }

// attachedValues returns args with one-letter flags written together, as
// getopt takes flock's -nE0 and -w5, split into arguments of their own:
// -n -E 0, -w 5. It looks at the flags only, up to the first argument that
// is none or "--": a command's own arguments stay as given. An argument
// that is not all one-letter flags stays as given too, for Parse to refuse
// by its name.
func attachedValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args)+2)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return append(out, args[i:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil && a[1] != '-' && !hasValue {
			if split, last, ok := shortFlags(fs, a[1:]); ok {
				out = append(out, split...)
				f = last
			} else {
				out = append(out, a)
			}
		} else {
			out = append(out, a)
		}
		if f != nil && !hasValue && !isBoolFlag(f) && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// shortFlags splits letters, an argument without its dash, into one-letter
// flags of fs, the last of which may take the rest as its value; last is
// that flag when its value is the next argument, else nil. ok is false
// when a letter is no flag.
func shortFlags(fs *flag.FlagSet, letters string) (split []string, last *flag.Flag, ok bool) {
	for i := 0; i < len(letters); i++ {
		f := fs.Lookup(letters[i : i+1])
		if f == nil {
			return nil, nil, false
		}
		split = append(split, "-"+f.Name)
		if !isBoolFlag(f) {
			if rest := letters[i+1:]; rest != "" {
				return append(split, rest), nil, true
			}
			return split, f, true
		}
	}
	return split, nil, true
}

// isBoolFlag reports whether f takes no value.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// aliasOf returns the name of the flag f sets, or "" when f is no alias.
func aliasOf(f *flag.Flag) string {
	if a, ok := f.Value.(*alias); ok {
		return a.target
	}
	return ""
}

// aliasClash says which flags set the same one when more than one of them
// was given (--wait 5s -n), and returns "" when none did: giving one is
// clearer than a rule of which counts.
func aliasClash(fs *flag.FlagSet) string {
	var targets []string
	given := map[string][]string{} // by target, the given flags that set it
	fs.Visit(func(f *flag.Flag) {
		target := f.Name
		if t := aliasOf(f); t != "" {
			target = t
		}
		if given[target] == nil {
			targets = append(targets, target)
		}
		given[target] = append(given[target], dashed(f.Name))
	})
	for _, target := range targets {
		if set := given[target]; len(set) > 1 {
			last := len(set) - 1
			return fmt.Sprintf("%s and %s set the same flag, --%s: give one of them",
				strings.Join(set[:last], ", "), set[last], target)
		}
	}
	return ""
}

// onceString is a string flag that may be given once: given again, it
// keeps the last value, and repeated says so (see repeatedFlags), where a
// plain string flag would silently drop the earlier ones.
type onceString struct {
	s     *string
	given int
}

func (o *onceString) String() string {
	if o == nil || o.s == nil {
		return ""
	}
	return *o.s
}

func (o *onceString) Set(s string) error {
	*o.s = s
	o.given++
	return nil
}

// repeatedFlags says which flag that may be given once (onceString) was
// given more than once, and returns "" when none was: --nodes a --nodes b
// would otherwise lock over b alone.
func repeatedFlags(fs *flag.FlagSet) string {
	msg := ""
	fs.Visit(func(f *flag.Flag) {
		if o, ok := f.Value.(*onceString); ok && o.given > 1 && msg == "" {
			msg = fmt.Sprintf("--%s given %d times: give it once, with every value in it (comma-separated for --nodes)", f.Name, o.given)
		}
	})
	return msg
}

// dashed returns a flag's name as the help writes it: -n for one letter,
// --wait otherwise.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// describedString is a string flag whose default is said in words:
// --metrics-addr, whose empty default stands for what the environment
// says, else a fixed address.
type describedString struct {
	s           *string
	defaultWord string
}

func (d describedString) String() string {
	if d.s == nil {
		return ""
	}
	return *d.s
}

func (d describedString) Set(s string) error {
	*d.s = s
	return nil
}

func (d describedString) defaultText() string { return d.defaultWord }

// newFlagSet returns a FlagSet that reports errors instead of exiting and
// prints nothing itself: the caller prints help and errors.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// writeFlags prints every flag of fs, one per entry, each with its default,
// and after each the aliases that set it.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if aliasOf(f) != "" {
			return
		}
		writeFlag(w, f, " (default "+defaultText(f)+")")
		fs.VisitAll(func(a *flag.Flag) {
			if aliasOf(a) == f.Name {
				writeFlag(w, a, "")
			}
		})
	})
}

// writeFlag prints one flag's entry: its name and argument, then its
// usage and tail, wrapped.
func writeFlag(w io.Writer, f *flag.Flag, tail string) {
	arg, usage := flag.UnquoteUsage(f)
	head := "  " + dashed(f.Name)
	if arg != "" {
		head += " " + arg
	}
	fmt.Fprintf(w, "%s\n", head)
	for _, line := range wrap(usage+tail, 72) {
		fmt.Fprintf(w, "        %s\n", line)
	}
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

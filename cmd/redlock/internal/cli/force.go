package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/redlock-go/redlock"
)

// forceFlags are release's --force and --by.
type forceFlags struct {
	force bool
	by    string
}

// register adds --force and --by to fs.
func (f *forceFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.force, "force", false, "free the lock KEY whoever holds it, without its token (KEY alone): "+
		"for a stuck lock; its holder learns it was taken over at its next extension")
	fs.Var(describedString{&f.by, "$USER@host"}, "by",
		"with --force, record `WHO` forced it, as an owner: printable ASCII without spaces")
}

// defaultBy is who forces a lock free by default: "$USER@host", with the
// name of the process's user where $USER is unset (cron, systemd).
func defaultBy() string {
	host, _ := os.Hostname()
	name := os.Getenv("USER")
	if u, err := user.Current(); name == "" && err == nil {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return name + "@" + host
}

// forceRelease is release --force KEY: it frees the lock KEY whoever holds
// it, and returns the exit code.
func forceRelease(ctx context.Context, r report, nodes *nodeFlags, lf *lockFlags, by string, args []string) int {
	if msg := positional(args, "KEY"); msg != "" {
		return r.usage("--force takes KEY alone (" + msg + ")")
	}
	if lf.limited() {
		return r.usage("--force frees one permit by its key, KEY:permit:i, not by --limit")
	}
	key := args[0]
	r.key = key
	if by == "" {
		by = defaultBy()
	}
	client, f, err := nodes.dial(ctx, r.s.stderr)
	if err != nil {
		return r.failedAs(f, err)
	}
	defer nodes.close(client)
	grants, err := client.ForceRelease(ctx, key, by)
	if err != nil {
		return r.failed(err)
	}
	if r.json {
		out := releasedJSON{Key: key, Released: true, ForcedBy: by, Grants: []grantJSON{}}
		for _, g := range grants {
			out.Grants = append(out.Grants, newGrantJSON(g.Token))
		}
		writeJSON(r.s.stdout, out)
		return exitOK
	}
	for _, g := range grants {
		fmt.Fprintf(r.s.stdout, "forced %s free, held by %s\n", shown(key), holderText(g))
	}
	return exitOK
}

// holderText describes who held a grant: "OWNER since TIME (AGO ago)",
// or its token when it does not say.
func holderText(g redlock.Grant) string {
	if g.Owner == "" {
		return shown(g.Token)
	}
	return fmt.Sprintf("%s since %s (%s ago)", g.Owner, sinceText(g.Since), ageOf(g.Since).Round(time.Millisecond))
}

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"slices"
	"strings"
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
		code := r.failed(otherData(ctx, client, key, err))
		if hint := permitsHint(ctx, client, key, err); hint != "" {
			say(r.s.stderr, slog.LevelInfo, "release", hint)
		}
		return code
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

// permitsHint returns, when err says the lock key is held by nobody, and
// key is a semaphore's name whose permits are held, how to force one of
// them free; "" otherwise. A semaphore's name is no lock of its own.
func permitsHint(ctx context.Context, client *redlock.Client, key string, err error) string {
	if !errors.Is(err, redlock.ErrNotHeld) {
		return ""
	}
	held, _ := client.List(ctx, key+":permit:")
	held = slices.DeleteFunc(held, func(h redlock.HeldLock) bool { return h.Semaphore != key })
	if len(held) == 0 {
		return ""
	}
	return fmt.Sprintf("%q is a semaphore, %d of whose permits are held: --force frees a permit by its key, as in 'redlock release --force %s'",
		key, len(held), held[0].Key)
}

// holderText describes who held a grant: "OWNER since TIME (AGO ago)",
// or its token when it does not say.
func holderText(g redlock.Grant) string {
	if g.Owner == "" {
		return shown(g.Token)
	}
	return fmt.Sprintf("%s since %s (%s ago)", g.Owner, sinceText(g.Since), ageOf(g.Since).Round(time.Millisecond))
}

// errOtherData is a force release refused by so many nodes, because the
// key holds data that is no lock there (another program's key), that a
// majority cannot answer it: no retry frees it.
var errOtherData = errors.New("the key holds other data than a lock")

// otherData explains err, a failed force release of key, when the nodes
// that refused it hold other data than a lock under key, so many of them
// that no majority can answer: it wraps errOtherData with the key, the
// type of that data and on how many nodes. It returns err otherwise.
func otherData(ctx context.Context, client *redlock.Client, key string, err error) error {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Op != "force release" {
		return err
	}
	states, ierr := lookAgain(ctx, client, key)
	if ierr != nil || len(states) != len(qe.Nodes) {
		return err
	}
	var kinds []string
	n := 0
	for i, res := range qe.Nodes {
		kind := dataKind(states[i])
		if res.Outcome != redlock.OutcomeError || kind == "" {
			continue
		}
		n++
		if !slices.Contains(kinds, kind) {
			kinds = append(kinds, kind)
		}
	}
	if n == 0 || len(qe.Nodes)-n >= qe.Quorum {
		return err
	}
	text := fmt.Sprintf("%q holds other data than a lock on %d of %d nodes (%s: another program's key?): "+
		"--force frees only locks, and left it as it is; lock another name, or delete that key", key, n, len(qe.Nodes), strings.Join(kinds, " or "))
	return fmt.Errorf("%w: %w", err, &detail{sentinel: errOtherData, text: text})
}

// dataKind describes the data a node keeps under a key that is no lock a
// force release frees: "a hash", "a list"..., or "a string without an
// expiry", which no lock client writes; "" for a lock, readers, or
// nothing.
func dataKind(st redlock.NodeState) string {
	switch {
	case st.Err != nil:
		return ""
	case st.Data != "":
		return "a " + st.Data
	case st.Holder != "" && st.TTL < 0:
		return "a string without an expiry"
	}
	return ""
}

package cli

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// inspect shows who holds a lock and since when: the owner --owner named,
// by default host:pid, with the grant's time, in text and in JSON.
func TestInspect_ownerAndSince(t *testing.T) {
	_, nodes := newCluster(t, 3)
	before := time.Now().Add(-time.Millisecond)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--owner", "deploy-bot@ci", "orders").expect(t, exitOK, "acquire --owner").decode(t, &lock)
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "orders").expect(t, exitOK, "inspect --json").decode(t, &state)
	since, err := time.Parse(time.RFC3339Nano, state.Since)
	if state.Holder != lock.Token || state.Owner != "deploy-bot@ci" || err != nil || since.Before(before) || since.After(time.Now()) || state.AgeMs < 0 {
		t.Errorf("inspect --json: holder %q, owner %q since %q (%v); want %q by deploy-bot@ci since %s", state.Holder, state.Owner, state.Since, err, lock.Token, before)
	}
	for _, n := range state.Nodes {
		if n.Holder == lock.Token && (n.Owner != "deploy-bot@ci" || n.Since != state.Since) {
			t.Errorf("node %s: owner %q since %q", n.Node, n.Owner, n.Since)
		}
	}
	text := cli(t, "inspect", "--nodes", nodes, "orders").expect(t, exitOK, "inspect").stdout
	if !regexp.MustCompile(`held by ` + regexp.QuoteMeta(lock.Token) + ` on \d of 3 nodes \(2 needed\), owner deploy-bot@ci since ` +
		regexp.QuoteMeta(state.Since) + ` \(\d[.\dµmsh]* ago\)\n$`).MatchString(text) {
		t.Errorf("inspect:\n%s", text)
	}

	host, _ := os.Hostname()
	cli(t, "acquire", "--nodes", nodes, "--json", "plain").expect(t, exitOK, "acquire").decode(t, &lock)
	cli(t, "inspect", "--nodes", nodes, "--json", "plain").expect(t, exitOK, "inspect --json").decode(t, &state)
	if want := fmt.Sprintf("%s:%d", host, os.Getpid()); state.Owner != want {
		t.Errorf("default owner %q, want %q", state.Owner, want)
	}
}

// inspect shows the owner of each reader and of each permit.
func TestInspect_ownersOfReadersAndPermits(t *testing.T) {
	_, nodes := newCluster(t, 3)
	for _, owner := range []string{"reader-1", "reader-2"} {
		cli(t, "acquire", "--nodes", nodes, "--shared", "--owner", owner, "orders").expect(t, exitOK, "acquire --shared")
	}
	var state inspectJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "orders").expect(t, exitOK, "inspect --json").decode(t, &state)
	owners := map[string]bool{}
	for i, g := range state.ReaderGrants {
		if g.Token != state.Readers[i] || g.Since == "" {
			t.Errorf("reader grant %d: %+v, for the reader %q", i, g, state.Readers[i])
		}
		owners[g.Owner] = true
	}
	if len(state.ReaderGrants) != 2 || !owners["reader-1"] || !owners["reader-2"] {
		t.Errorf("inspect --json of 2 readers: reader_grants %+v", state.ReaderGrants)
	}
	text := cli(t, "inspect", "--nodes", nodes, "orders").expect(t, exitOK, "inspect").stdout
	if !strings.Contains(text, "on 3 of 3 nodes, owner reader-1 since ") || !strings.Contains(text, "on 3 of 3 nodes, owner reader-2 since ") {
		t.Errorf("inspect of 2 readers:\n%s", text)
	}

	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--limit", "2", "--owner", "permit-owner", "sem").expect(t, exitOK, "acquire --limit").decode(t, &lock)
	text = cli(t, "inspect", "--nodes", nodes, "--limit", "2", "sem").expect(t, exitOK, "inspect --limit").stdout
	if !regexp.MustCompile(`(?m)^\d +` + regexp.QuoteMeta(lock.Key) + ` +` + regexp.QuoteMeta(lock.Token) + ` +permit-owner +\d{4}-\d\d-\d\dT`).MatchString(text) {
		t.Errorf("inspect --limit 2:\n%s", text)
	}
}

// An owner that cannot go in a token is bad input, said with the flag
// that gave it, not the library's name for it, and refused before any node
// is asked, with the usage hint of every usage error.
func TestAcquire_invalidOwner(t *testing.T) {
	_, nodes := newCluster(t, 1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acquire", "--nodes", nodes, "--owner", "two words", "k"}, `invalid value "two words" for flag -owner: byte 3 is ' '`},
		{[]string{"release", "--nodes", nodes, "--force", "--by", "two words", "k"}, `invalid owner: --by "two words"`},
	} {
		r := cli(t, tc.args...).expect(t, exitUsage, strings.Join(tc.args, " "))
		if !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "WithOwner") || strings.Contains(r.stderr, "ForceRelease") ||
			!strings.Contains(r.stderr, "Run 'redlock help "+tc.args[0]+"' for usage.") {
			t.Errorf("%s: stderr: %s", tc.args[0], r.stderr)
		}
	}
}

// A command refused a lock that another holder has says who: its token,
// owner and expiry, after one attempt (-n) as after a wait that ran out,
// for a reader as for a writer.
func TestRefused_namesTheHolder(t *testing.T) {
	_, nodes := newCluster(t, 3)
	cli(t, "acquire", "--nodes", nodes, "--owner", "alice:1", "busy").expect(t, exitOK, "acquire --owner")
	for _, wait := range [][]string{{"-n"}, {"-w", "0.3"}, {"--shared", "-n"}} {
		args := append(append([]string{"run", "--nodes", nodes}, wait...), "busy", "--", "true")
		r := cli(t, args...).expect(t, exitConflict, "run "+strings.Join(wait, " ")+" busy")
		if !regexp.MustCompile(`"busy" is held by another holder on \d of 3 nodes \(token \S+alice:1\S*, owner alice:1, expires in `).MatchString(r.stderr) {
			t.Errorf("run %s of a held lock says:\n%s", wait, r.stderr)
		}
	}
}

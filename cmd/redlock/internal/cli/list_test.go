package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// list shows the held locks, permits and readers under a prefix, with
// their owners, in text and JSON; with a node down it shows what the
// others hold and exits 69.
func TestList(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	cli(t, "acquire", "--nodes", nodes, "--owner", "billing", "orders").expect(t, exitOK, "acquire orders")
	cli(t, "acquire", "--nodes", nodes, "--limit", "2", "--owner", "api-client", "sem").expect(t, exitOK, "acquire a permit")
	for _, owner := range []string{"r1", "r2"} {
		cli(t, "acquire", "--nodes", nodes, "--shared", "--owner", owner, "doc").expect(t, exitOK, "acquire --shared")
	}

	var out listJSON
	cli(t, "list", "--nodes", nodes, "--json").expect(t, exitOK, "list --json").decode(t, &out)
	if !out.Complete || out.All != 3 || out.Quorum != 2 || len(out.Locks) != 3 {
		t.Fatalf("list --json: %+v", out)
	}
	var none listJSON
	cli(t, "list", "--nodes", nodes, "--json", "nothing-here").expect(t, exitOK, "list --json of no lock").decode(t, &none)
	if !none.Complete || none.All != 3 || none.Quorum != 2 || len(none.Locks) != 0 {
		t.Errorf("list --json of no lock: %+v", none)
	}
	// Each acquire returned once a quorum granted it: a lock is held on 2
	// or 3 nodes.
	doc, orders, permit := out.Locks[0], out.Locks[1], out.Locks[2]
	if doc.Key != "doc" || doc.Kind != "shared" || len(doc.Grants) != 2 || doc.Holding < 2 || doc.Holding > 3 || !doc.Majority {
		t.Errorf("doc: %+v", doc)
	}
	if orders.Key != "orders" || orders.Kind != "lock" || len(orders.Grants) != 1 || orders.Grants[0].Owner != "billing" ||
		orders.Grants[0].Since == "" || orders.TTLMs <= 0 || orders.Holding < 2 || orders.Holding > 3 || !orders.Majority {
		t.Errorf("orders: %+v", orders)
	}
	if permit.Kind != "permit" || permit.Semaphore != "sem" || permit.Permit < 1 || permit.Grants[0].Owner != "api-client" {
		t.Errorf("permit: %+v", permit)
	}

	text := cli(t, "list", "--nodes", nodes, "ord").expect(t, exitOK, "list ord").stdout
	if !regexp.MustCompile(`(?m)^KEY +KIND +OWNER +SINCE +TTL +NODES +WAITING\norders +lock +billing +\S+ ago +\S+ +[23]/3 +0\n1 lock held\n$`).MatchString(text) {
		t.Errorf("list ord:\n%s", text)
	}
	text = cli(t, "list", "--nodes", nodes).expect(t, exitOK, "list").stdout
	if !strings.Contains(text, "r1,r2") && !strings.Contains(text, "r2,r1") || !strings.HasSuffix(text, "\n3 locks held\n") {
		t.Errorf("list:\n%s", text)
	}

	// A lock left on one node of three is listed, marked, and not counted
	// as held. It is taken on that node alone: one taken on all three
	// returns at a quorum, and could reach a node after a DEL there.
	cli(t, "acquire", "--nodes", cluster.URLs()[0], "left").expect(t, exitOK, "acquire left")
	text = cli(t, "list", "--nodes", nodes, "left").expect(t, exitOK, "list left").stdout
	if !regexp.MustCompile(`(?m)^left +lock .* 1/3\* +0\n0 locks held, 1 more on fewer than a majority of nodes \(\*\)\n$`).MatchString(text) {
		t.Errorf("list of a lock left on one node:\n%s", text)
	}

	if err := cluster.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	r := cli(t, "list", "--nodes", nodes, "--json").expect(t, exitUnavailable, "list with a node down")
	r.decode(t, &out)
	if out.Complete || len(out.Locks) != 4 || out.Locks[2].Answered != 2 || !strings.Contains(r.stderr, "list incomplete") {
		t.Errorf("list with a node down: %+v\n%s", out, r.stderr)
	}
}

// A key with a newline, a tab or a terminal escape is shown quoted, in
// list's table and in what release and release --force print, so that it
// cannot forge a row or drive the terminal.
func TestList_controlCharactersQuoted(t *testing.T) {
	_, nodes := newCluster(t, 3)
	evil := "evil\nFAKE\tlock\x1b[2J"
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", evil).expect(t, exitOK, "acquire a key with control characters").decode(t, &lock)
	text := cli(t, "list", "--nodes", nodes).expect(t, exitOK, "list").stdout
	if want := `"evil\nFAKE\tlock\x1b[2J"`; !strings.Contains(text, want) || strings.Contains(text, "\x1b") || strings.Count(text, "\n") != 3 {
		t.Errorf("list: want the key as %s on one row:\n%q", want, text)
	}
	out := cli(t, "release", "--nodes", nodes, evil, lock.Token).expect(t, exitOK, "release").stdout
	if out != "released \"evil\\nFAKE\\tlock\\x1b[2J\"\n" {
		t.Errorf("release: %q", out)
	}
	cli(t, "acquire", "--nodes", nodes, evil).expect(t, exitOK, "acquire again")
	out = cli(t, "release", "--nodes", nodes, "--force", evil).expect(t, exitOK, "release --force").stdout
	if strings.Contains(out, "\x1b") || strings.Count(out, "\n") != 1 {
		t.Errorf("release --force: %q", out)
	}
}

// A key whose bytes are no UTF-8 is shown quoted too: 0x9b alone starts a
// terminal escape on some terminals, and 0xff broke the table's columns.
func TestList_bytesThatAreNoUTF8Quoted(t *testing.T) {
	_, nodes := newCluster(t, 3)
	for _, key := range []string{"\xff\xfe", "\x9b31mC1"} {
		cli(t, "acquire", "--nodes", nodes, key).expect(t, exitOK, "acquire a key that is no UTF-8")
	}
	text := cli(t, "list", "--nodes", nodes).expect(t, exitOK, "list").stdout
	for _, want := range []string{`"\xff\xfe"`, `"\x9b31mC1"`} {
		if !strings.Contains(text, want) {
			t.Errorf("list: want the key as %s:\n%q", want, text)
		}
	}
	if strings.Contains(text, "\xff") || strings.Contains(text, "\x9b") || !utf8.ValidString(text) {
		t.Errorf("list prints bytes that are no UTF-8:\n%q", text)
	}
	// In JSON, which cannot carry them, the key comes in base64 as well,
	// to be given back to release --force or inspect.
	var out listJSON
	cli(t, "list", "--nodes", nodes, "--json").expect(t, exitOK, "list --json").decode(t, &out)
	got := map[string]bool{}
	for _, l := range out.Locks {
		key, err := base64.StdEncoding.DecodeString(l.KeyBase64)
		if err != nil || l.KeyBase64 == "" {
			t.Errorf("list --json: key %q with key_base64 %q", l.Key, l.KeyBase64)
		}
		got[string(key)] = true
	}
	if len(got) != 2 || !got["\xff\xfe"] || !got["\x9b31mC1"] {
		t.Errorf("list --json: keys %v", got)
	}
	cli(t, "release", "--nodes", nodes, "--force", "\xff\xfe").expect(t, exitOK, "release --force of a key that is no UTF-8")
}

// A holder's token that another writer set on the nodes, with a terminal
// escape and a newline in it, is shown quoted by inspect, check and
// release --force.
func TestInspect_foreignTokenQuoted(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	const token = "x\x1b[2J\nFAKE"
	for _, n := range cluster.Nodes() {
		if _, err := n.Do(bg, "SET", "foreign", token, "PX", "20000"); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"inspect", "--nodes", nodes, "foreign"},
		{"check", "--nodes", nodes, "foreign", "other-token"},
		{"release", "--nodes", nodes, "--force", "foreign"},
	} {
		r := cli(t, args...)
		if strings.Contains(r.stdout, "\x1b") || strings.Contains(r.stdout, "\nFAKE") || !strings.Contains(r.stdout, `x\x1b[2J\nFAKE`) {
			t.Errorf("%s: %q", args[0], r.stdout)
		}
	}
}

// A node that refuses its configuration (here its password) keeps the
// commands that change nothing from none of the others: inspect, list and
// check show what the other nodes answer, saying what is wrong with that
// node, as with a node down; a command that takes a lock still refuses
// the node list.
func TestReadOnlyVerbs_showTheOtherNodesPastARefusingNode(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--ttl", "30s", "job").expect(t, exitOK, "acquire").decode(t, &lock)
	if _, err := cluster.Node(2).Do(bg, "CONFIG", "SET", "requirepass", "s3cret-pw"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"inspect", "job"}, {"list"}, {"check", "job", lock.Token}} {
		r := cli(t, append([]string{args[0], "--nodes", nodes}, args[1:]...)...)
		if r.code == exitConfig || !strings.Contains(r.stdout, "job") || !strings.Contains(r.stderr, "NOAUTH") {
			t.Errorf("redlock %s with a node that refuses its password: exit %d\nstdout:\n%s\nstderr:\n%s",
				strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	cli(t, "acquire", "--nodes", nodes, "--wait", "0", "other").expect(t, exitConfig, "acquire with a node that refuses its password")
}

// Nodes that refuse their configuration and leave no majority make the
// commands that change nothing fail as a bad node list, as the others do:
// no answer of theirs could be complete, and elect --listen would wait
// for ever.
func TestReadOnlyVerbs_refuseTheNodeListWhereRefusingNodesLeaveNoMajority(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, i := range []int{1, 2} {
		if _, err := cluster.Node(i).Do(bg, "CONFIG", "SET", "requirepass", "s3cret-pw"); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"inspect", "job"}, {"list"}, {"check", "job", "a-token"}, {"elect", "--listen", "job"}} {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		var stdout, stderr bytes.Buffer
		code := Run(ctx, append([]string{args[0], "--nodes", nodes}, args[1:]...), strings.NewReader(""), &stdout, &stderr)
		cancel()
		if code != exitConfig || !strings.Contains(stderr.String(), cluster.Node(1).Addr()+": NOAUTH") ||
			!strings.Contains(stderr.String(), cluster.Node(2).Addr()+": NOAUTH") {
			t.Errorf("redlock %s with 2 of 3 nodes refusing their password: exit %d, want %d naming both\nstdout:\n%s\nstderr:\n%s",
				strings.Join(args, " "), code, exitConfig, stdout.String(), stderr.String())
		}
	}
}

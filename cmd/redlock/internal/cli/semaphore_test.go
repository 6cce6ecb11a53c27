package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-go/redlock"
)

// holdCheck is how long a third run is given to start while two hold the
// semaphore's two permits: one that does not wait starts in a few
// milliseconds.
const holdCheck = 500 * time.Millisecond

// Three runs of a command with --limit 2: two run at once, the third waits
// until one of them ends, saying that all the permits are held, and each
// command is told the permit it holds.
func TestRun_limitRunsAtMostNAtOnce(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "log"), filepath.Join(dir, "go")
	show := `"$REDLOCK_PERMIT $REDLOCK_LIMIT $REDLOCK_KEY $REDLOCK_TOKEN" >> ` + log
	script := `echo start ` + show + `; while [ ! -e ` + gate + ` ]; do sleep 0.02; done; echo stop ` + show
	var cmds []*exec.Cmd
	var stderrs []*bytes.Buffer
	for range 3 {
		cmd := binaryCommand(nodes, "run", "--limit", "2", "--shell", "sem", "--", script)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		cmds, stderrs = append(cmds, cmd), append(stderrs, &stderr)
	}

	waitForLines(t, log, 2, 10*time.Second)
	time.Sleep(holdCheck)
	if lines := readLines(t, log); len(lines) != 2 {
		t.Fatalf("with two permits held, the log is:\n%s", strings.Join(lines, "\n"))
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := waitTimeout(cmd, 20*time.Second); err != nil {
			t.Errorf("run %d: %v\n%s", i, err, stderrs[i])
		}
	}
	wantAtMostTwoAtOnce(t, readLines(t, log))
	said := 0
	for _, stderr := range stderrs {
		if strings.Contains(stderr.String(), `redlock run: waiting for "sem" (0s so far): all 2 permits held by other holders`) {
			said++
		}
	}
	if said == 0 {
		t.Errorf("no run said that it waited for a full semaphore:\n%s\n%s\n%s", stderrs[0], stderrs[1], stderrs[2])
	}
	for _, key := range []string{"sem:permit:1", "sem:permit:2"} {
		assertReleased(t, cluster, key, "after the runs ended")
	}
}

// wantAtMostTwoAtOnce checks the start and stop lines of three commands
// that each held a permit of a semaphore of 2: at most two at once, two at
// some point, each with a distinct token and a permit that no other
// running command held, named in REDLOCK_KEY, REDLOCK_PERMIT and
// REDLOCK_LIMIT.
func wantAtMostTwoAtOnce(t *testing.T, lines []string) {
	t.Helper()
	running := map[string]string{} // permit to token
	tokens := map[string]bool{}
	most := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 5 || f[2] != "2" || f[3] != "sem:permit:"+f[1] || (f[1] != "1" && f[1] != "2") {
			t.Fatalf("line %q: want start|stop PERMIT 2 sem:permit:PERMIT TOKEN", l)
		}
		event, permit, token := f[0], f[1], f[4]
		switch {
		case event == "start" && running[permit] != "":
			t.Errorf("%q: permit %s is held by %s", l, permit, running[permit])
		case event == "start":
			running[permit], tokens[token] = token, true
		case running[permit] != token:
			t.Errorf("%q: permit %s is not held by it", l, permit)
		default:
			delete(running, permit)
		}
		most = max(most, len(running))
	}
	if most != 2 || len(tokens) != 3 || len(lines) != 6 {
		t.Errorf("at most %d ran at once, with %d tokens, want 2 and 3:\n%s", most, len(tokens), strings.Join(lines, "\n"))
	}
}

// readLines returns the lines of the file at path.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	text := strings.TrimSpace(string(b))
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// waitForLines waits until the file at path has n lines.
func waitForLines(t *testing.T, path string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(readLines(t, path)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d lines after %s, want %d", path, len(readLines(t, path)), timeout, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitTimeout waits for cmd to exit, for at most timeout.
func waitTimeout(cmd *exec.Cmd, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		cmd.Process.Kill()
		return <-done
	}
}

// acquire --limit prints the permit's key, which extend and release take
// with the token; so do KEY and --limit, which find the token's permit.
func TestAcquire_limitPrintsThePermitToRelease(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	var a, b acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--limit", "2", "sem").expect(t, exitOK, "first permit").decode(t, &a)
	cli(t, "acquire", "--nodes", nodes, "--json", "--limit", "2", "sem").expect(t, exitOK, "second permit").decode(t, &b)
	if keys := []string{a.Key, b.Key}; !slices.Contains(keys, "sem:permit:1") || !slices.Contains(keys, "sem:permit:2") {
		t.Fatalf("the two holders got %q", keys)
	}
	for _, p := range []acquiredJSON{a, b} {
		if p.Key != "sem:permit:"+strconv.Itoa(p.Permit) || p.Limit != 2 || p.Fence == 0 {
			t.Errorf("acquire --limit 2 printed %+v", p)
		}
		assertHeld(t, cluster, p.Key, p.Token, "after acquire --limit")
	}
	r := cli(t, "acquire", "--nodes", nodes, "--limit", "2", "--wait", "0", "sem").expect(t, exitConflict, "a third holder")
	if !strings.Contains(r.stderr, `all 2 permits of "sem" are held`) {
		t.Errorf("a third holder's stderr:\n%s", r.stderr)
	}

	cli(t, "extend", "--nodes", nodes, a.Key, a.Token).expect(t, exitOK, "extend of the printed permit")
	r = cli(t, "release", "--nodes", nodes, a.Key, a.Token).expect(t, exitOK, "release of the printed permit")
	if r.stdout != "released "+a.Key+"\n" {
		t.Errorf("release printed %q", r.stdout)
	}
	assertReleased(t, cluster, a.Key, "after its release")
	assertHeld(t, cluster, b.Key, b.Token, "after the other permit's release")
	r = cli(t, "acquire", "--nodes", nodes, "--limit", "2", "--wait", "0", "sem").expect(t, exitOK, "the freed permit")
	if want := "key       " + a.Key + "\npermit    " + strconv.Itoa(a.Permit) + " of 2\ntoken     "; !strings.HasPrefix(r.stdout, want) {
		t.Errorf("acquire of the freed permit printed %q, want it to start with %q", r.stdout, want)
	}

	r = cli(t, "extend", "--nodes", nodes, "--limit", "2", "sem", b.Token).expect(t, exitOK, "extend --limit")
	if !strings.HasPrefix(r.stdout, "extended "+b.Key+" until ") {
		t.Errorf("extend --limit printed %q", r.stdout)
	}
	var rel releasedJSON
	cli(t, "release", "--nodes", nodes, "--json", "--limit", "2", "sem", b.Token).expect(t, exitOK, "release --limit").decode(t, &rel)
	if rel.Key != b.Key || !rel.Released {
		t.Errorf("release --limit printed %+v, want key %s", rel, b.Key)
	}
	assertReleased(t, cluster, b.Key, "after release --limit")
	r = cli(t, "release", "--nodes", nodes, "--limit", "2", "sem", b.Token).expect(t, exitLockLost, "second release --limit")
	if !strings.Contains(r.stderr, `token `+b.Token+` holds none of the 2 permits of "sem" on any node`) {
		t.Errorf("second release --limit: stderr:\n%s", r.stderr)
	}
}

// extend, release and check given the semaphore's KEY and a permit's
// token, without --limit, find the permit the token holds, whatever its
// number, as they do with --limit N: the permit is held, and a script that
// passes KEY as it passed it to acquire must not be told it was lost.
func TestLimit_extendReleaseAndCheckFindThePermitWithoutLimit(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	for _, limit := range []string{"3", strconv.Itoa(redlock.MaxLimit)} {
		sem := "sem-" + limit
		var p acquiredJSON
		cli(t, "acquire", "--nodes", nodes, "--json", "--limit", limit, sem).expect(t, exitOK, "acquire --limit "+limit).decode(t, &p)

		r := cli(t, "extend", "--nodes", nodes, sem, p.Token).expect(t, exitOK, "extend of "+sem+" without --limit")
		if !strings.HasPrefix(r.stdout, "extended "+p.Key+" until ") {
			t.Errorf("extend of %s without --limit printed %q, want the permit's key %s", sem, r.stdout, p.Key)
		}
		var ext extendedJSON
		cli(t, "extend", "--nodes", nodes, "--json", sem, p.Token).expect(t, exitOK, "extend --json").decode(t, &ext)
		if ext.Key != p.Key || ext.ValidityMs <= 0 {
			t.Errorf("extend --json of %s without --limit: %+v, want key %s", sem, ext, p.Key)
		}
		var chk checkJSON
		cli(t, "check", "--nodes", nodes, "--json", sem, p.Token).expect(t, exitOK, "check of "+sem+" without --limit").decode(t, &chk)
		if chk.Key != p.Key || !chk.Current || chk.Holder != p.Token || chk.Fence != p.Fence {
			t.Errorf("check --json of %s without --limit: %+v, want %s current with fence %d", sem, chk, p.Key, p.Fence)
		}
		cli(t, "check", "--nodes", nodes, "--limit", limit, sem, p.Token).expect(t, exitOK, "check --limit "+limit)
		cli(t, "check", "--nodes", nodes, "--limit", limit, sem, strconv.FormatUint(p.Fence, 10)).
			expect(t, exitUsage, "check --limit with a fencing token")

		var rel releasedJSON
		cli(t, "release", "--nodes", nodes, "--json", sem, p.Token).expect(t, exitOK, "release of "+sem+" without --limit").decode(t, &rel)
		if rel.Key != p.Key || !rel.Released {
			t.Errorf("release --json of %s without --limit: %+v, want key %s", sem, rel, p.Key)
		}
		assertReleased(t, cluster, p.Key, "after its release without --limit")

		// Released: each says so, as of any lock.
		cli(t, "extend", "--nodes", nodes, sem, p.Token).expect(t, exitLockLost, "extend after the release")
		cli(t, "check", "--nodes", nodes, sem, p.Token).expect(t, exitLockLost, "check after the release")
		cli(t, "release", "--nodes", nodes, sem, p.Token).expect(t, exitLockLost, "release after the release")
	}
}

// A permit given by its key with --limit is acted on, as without it; and a
// permit an operator forced free is found by the semaphore's name, so that
// extend and release say so (77), not that it was lost.
func TestLimit_permitKeyWithLimitAndAForcedPermit(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var p acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--limit", "3", "sem").expect(t, exitOK, "acquire --limit 3").decode(t, &p)
	cli(t, "extend", "--nodes", nodes, "--limit", "3", p.Key, p.Token).expect(t, exitOK, "extend --limit 3 of the permit's key")
	cli(t, "release", "--nodes", nodes, "--limit", "3", p.Key, p.Token).expect(t, exitOK, "release --limit 3 of the permit's key")

	cli(t, "acquire", "--nodes", nodes, "--json", "--limit", "3", "forced").expect(t, exitOK, "acquire --limit 3").decode(t, &p)
	cli(t, "release", "--nodes", nodes, "--force", p.Key).expect(t, exitOK, "release --force "+p.Key)
	cli(t, "extend", "--nodes", nodes, "--limit", "3", "forced", p.Token).expect(t, exitTakenOver, "extend --limit 3 of a forced permit")
	cli(t, "extend", "--nodes", nodes, "forced", p.Token).expect(t, exitTakenOver, "extend of a forced permit without --limit")
	cli(t, "release", "--nodes", nodes, "forced", p.Token).expect(t, exitTakenOver, "release of a forced permit without --limit")
}

// inspect --limit shows each permit's holder and how many are held, and
// that too few nodes answered.
func TestInspect_limit(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	var lock acquiredJSON
	cli(t, "acquire", "--nodes", nodes, "--json", "--limit", "3", "sem").expect(t, exitOK, "acquire --limit 3").decode(t, &lock)

	var sem semaphoreJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "--limit", "3", "sem").expect(t, exitOK, "inspect --limit --json").decode(t, &sem)
	wantOnePermitHeld(t, sem, lock)
	text := cli(t, "inspect", "--nodes", nodes, "--limit", "3", "sem").expect(t, exitOK, "inspect --limit").stdout
	row := regexp.MustCompile(`(?m)^` + strconv.Itoa(lock.Permit) + ` +` + regexp.QuoteMeta(lock.Key) + ` +` +
		regexp.QuoteMeta(lock.Token) + ` +\S+ +\S+ +\d[.\d]*m?s +` + strconv.FormatUint(lock.Fence, 10) + ` +held on 3 of 3 nodes$`)
	if !strings.HasPrefix(text, `semaphore "sem", 3 permits:`) || !row.MatchString(text) ||
		strings.Count(text, " free\n") != 2 || !strings.HasSuffix(text, "\n1 of 3 permits held\n") {
		t.Errorf("inspect --limit 3:\n%s", text)
	}
	if text := cli(t, "inspect", "--nodes", nodes, "sem").expect(t, exitOK, "inspect").stdout; !strings.HasSuffix(text, "\nnot held\n") {
		t.Errorf("inspect of the lock sem, beside the semaphore sem:\n%s", text)
	}

	for _, i := range []int{0, 1} {
		if err := cluster.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	text = cli(t, "inspect", "--nodes", nodes, "--limit", "3", "sem").expect(t, exitUnavailable, "inspect --limit, 2 of 3 nodes down").stdout
	if !strings.Contains(text, "0 of 3 permits held, 3 unknown: fewer than 2 nodes answered") ||
		!strings.Contains(text, "node "+cluster.Node(0).Addr()+": error: ") || strings.Count(text, "unknown: 1 of 3 nodes answered") != 3 {
		t.Errorf("inspect --limit 3 with 2 of 3 nodes down:\n%s", text)
	}
}

// wantOnePermitHeld fails the test unless sem, what inspect --limit 3
// printed, shows the three permits of "sem" with lock's alone held.
func wantOnePermitHeld(t *testing.T, sem semaphoreJSON, lock acquiredJSON) {
	t.Helper()
	if sem.Key != "sem" || sem.Limit != 3 || sem.Quorum != 2 || sem.Held != 1 || len(sem.Permits) != 3 {
		t.Fatalf("inspect --limit 3 --json: %+v", sem)
	}
	for i, p := range sem.Permits {
		want := ""
		if p.Key == lock.Key {
			want = lock.Token
		}
		if p.Key != "sem:permit:"+strconv.Itoa(i+1) || p.Holder != want || len(p.Nodes) != 3 {
			t.Errorf("permit %d: %+v (the holder has %s)", i+1, p, lock.Key)
		}
	}
}

// The largest limit is accepted: every permit is read.
func TestInspect_limitOfMaxLimitPermits(t *testing.T) {
	_, nodes := newCluster(t, 3)
	var sem semaphoreJSON
	cli(t, "inspect", "--nodes", nodes, "--json", "--limit", "1024", "sem").expect(t, exitOK, "inspect --limit 1024").decode(t, &sem)
	if len(sem.Permits) != 1024 || sem.Permits[1023].Key != "sem:permit:1024" || sem.Held != 0 {
		t.Errorf("inspect --limit 1024: %d permits, the last %q, %d held", len(sem.Permits), sem.Permits[len(sem.Permits)-1].Key, sem.Held)
	}
}

// A --limit out of 1..1024, or not a number, is a usage error for every
// command that takes it, and nothing is written to the nodes.
func TestLimit_badValuesLockNothing(t *testing.T) {
	cluster, nodes := newCluster(t, 3)
	sizes := func() []string {
		var s []string
		for _, n := range cluster.Nodes() {
			size, err := n.Do(bg, "DBSIZE")
			if err != nil {
				t.Fatal(err)
			}
			s = append(s, size)
		}
		return s
	}
	before := sizes()
	marker := filepath.Join(t.TempDir(), "ran")
	const want = "want a number of permits from 1 to 1024"
	for _, v := range []string{"0", "-1", "1025", "two", "1.5", ""} {
		for _, args := range [][]string{
			{"run", "--limit", v, "sem", "--", "touch", marker},
			{"acquire", "--wait", "0", "--limit", v, "sem"},
			{"inspect", "--limit", v, "sem"},
			{"extend", "--limit", v, "sem", "token"},
			{"release", "--limit", v, "sem", "token"},
		} {
			r := cli(t, append([]string{args[0], "--nodes", nodes}, args[1:]...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, want) {
				t.Errorf("redlock %s: exit %d, want %d and %q:\n%s", strings.Join(args, " "), r.code, exitUsage, want, r.stderr)
			}
		}
		var f failureJSON
		cli(t, "acquire", "--nodes", nodes, "--json", "--limit", v, "sem").expect(t, exitUsage, "acquire --json --limit "+v).decode(t, &f)
		if f.Reason != failInvalid || !strings.Contains(f.Error, want) {
			t.Errorf("acquire --json --limit %q: %+v", v, f)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}
	if after := sizes(); !slices.Equal(before, after) {
		t.Errorf("the nodes hold %v keys, %v before", after, before)
	}
}

package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/cmd/redlock/internal/observe"
	"github.com/redlock-go/redlock/goredis"
)

// listRefusal is a failure found before any lock operation was sent: the
// node list refused (a malformed URL, an empty entry, a node given twice,
// a node that refuses its configuration), or a metrics endpoint that
// cannot listen. nodes are the entries of the node list, in order, each
// with what came of it, which a failure's JSON gives as "nodes", as it
// gives each node's outcome of an operation.
type listRefusal struct {
	err   error
	nodes []nodeJSON
}

func (e *listRefusal) Error() string { return e.err.Error() }
func (e *listRefusal) Unwrap() error { return e.err }

// refused returns err, a refusal of the node list (or of the metrics
// endpoint), with the entries of the list, for the failure's "nodes".
func (n *nodeFlags) refused(err error) error {
	var lr *listRefusal
	if errors.As(err, &lr) {
		return err
	}
	if errors.Is(err, observe.ErrEndpoint) {
		return &listRefusal{err: err, nodes: n.entries(nil)} // no node's fault
	}
	return &listRefusal{err: err, nodes: n.entries(err)}
}

// entries returns each entry of the node list as a node of a failure's
// JSON: named as the outcomes of an operation name it (its address), or,
// when it does not parse, as given with its password redacted; with the
// outcome "error" and why for an entry at fault, else "not asked", as no
// lock operation was sent to any node. An entry is at fault when it is
// empty, does not parse, names the node of an earlier entry, or is the
// one that a part of refusal, the error of the node check, names (the
// later of two that reach one server).
func (n *nodeFlags) entries(refusal error) []nodeJSON {
	raw, _ := n.list()
	list := strings.Split(raw, ",")
	if urls, err := n.urls(); err == nil && len(urls) == len(list) {
		list = urls // with the TLS flags' files: a file that does not load is each rediss:// entry's fault
	}
	out := make([]nodeJSON, len(list))
	redacted := make([]string, len(list))
	for i, u := range list {
		u = strings.TrimSpace(u)
		redacted[i] = goredis.RedactURL(u)
		out[i] = entryNode(u, i, len(list))
		if out[i].Error == "" {
			out[i].Error = sameAsEarlier(out[:i], out[i].Node, i)
		}
	}
	blameParts(out, redacted, refusal)
	for i := range out {
		out[i].Outcome = outcomeName("", redlock.OutcomeNotAsked)
		if out[i].Error != "" {
			out[i].Outcome = outcomeName("", redlock.OutcomeError)
		}
	}
	return out
}

// entryNode returns the entry u, the i-th of a list of n, as a node of a
// failure's JSON, with why it is at fault when it is empty or does not
// parse; its outcome is left to the caller.
func entryNode(u string, i, n int) nodeJSON {
	if u == "" {
		if n == 1 {
			return nodeJSON{Error: "the node list is empty"}
		}
		return nodeJSON{Error: fmt.Sprintf("entry %d is empty", i+1)}
	}
	c, err := goredis.NewURL(u) // no I/O; its errors never show a password
	if err != nil {
		return nodeJSON{Node: goredis.RedactURL(u), Error: errText(err)}
	}
	defer c.Close()
	return nodeJSON{Node: c.Name()}
}

// sameAsEarlier says that name, the node of entry i, is the node of an
// entry of earlier too, in the words of redlock.New, and returns "" when
// it is none's.
func sameAsEarlier(earlier []nodeJSON, name string, i int) string {
	for j, e := range earlier {
		if e.Error == "" && e.Node == name {
			return fmt.Sprintf("duplicate node: %s is entries %d and %d of the node list (counting from 1)", name, j+1, i+1)
		}
	}
	return ""
}

// blameParts gives each part of refusal, the node check's error (one part
// per node at fault, joined), to the last entry of out that it names, by
// its name or its redacted URL, when that entry is not at fault already:
// a part that names two entries says that the later one reaches the
// server of the earlier.
func blameParts(out []nodeJSON, redacted []string, refusal error) {
	for _, part := range joinedParts(refusal) {
		text := errText(part)
		for i := len(out) - 1; i >= 0; i-- {
			if namesNode(text, out[i].Node) || namesNode(text, redacted[i]) {
				if out[i].Error == "" {
					out[i].Error = text
				}
				break
			}
		}
	}
}

// joinedParts returns the errors that err joins (errors.Join), found by
// unwrapping it, or err alone when it joins none.
func joinedParts(err error) []error {
	if err == nil {
		return nil
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			return j.Unwrap()
		}
	}
	return []error{err}
}

// namesNode reports whether text names the node name as a word of its own:
// after a space or a parenthesis (or at the start), and before a colon, a
// space, a comma, a parenthesis (or at the end), so that 127.0.0.1:6379
// is not found in 127.0.0.1:63790.
func namesNode(text, name string) bool {
	if name == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(text[from:], name)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(name)
		before := start == 0 || strings.ContainsRune(" (", rune(text[start-1]))
		after := end == len(text) || strings.ContainsRune(" :,)", rune(text[end]))
		if before && after {
			return true
		}
		from = start + 1
	}
}

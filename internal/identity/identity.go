// Package identity tells which server a node's connection reaches, so that
// one server listed twice under two names (localhost and 127.0.0.1, a DNS
// alias) is not counted as two votes. A server is known by its run_id, and
// by its cluster node id when it runs in cluster mode; a Redis Cluster
// reached as one node is known by the ids of all its nodes.
package identity

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
)

// Doer sends one command to a node and returns its decoded reply: the root
// package's Conn has it.
type Doer interface {
	Do(ctx context.Context, args ...string) (any, error)
}

// Of returns what identifies the servers behind conn, each as "run_id …"
// or "cluster node …". A Conn that reaches a Redis Cluster (one with the
// method IsCluster that returns true) is every node id of the cluster
// (CLUSTER NODES, whichever node answers), so the same cluster reached
// through different seeds shares them all. A single server is its run_id,
// and its cluster node id when it runs in cluster mode, so that a plain
// URL to one master of a cluster listed whole is caught too: CLUSTER MYID,
// asked unless INFO says the server runs standalone. What a node refuses
// to tell (an ACL without INFO) leaves it out: it cannot be told apart.
// err is that of a request the node did not answer (see Answered): its
// identity is then unknown.
func Of(ctx context.Context, conn Doer) (ids []string, err error) {
	if c, ok := conn.(interface{ IsCluster() bool }); ok && c.IsCluster() {
		return clusterNodeIDs(ctx, conn)
	}
	v, err := conn.Do(ctx, "INFO", "server")
	if !Answered(err) {
		return nil, err
	}
	if id := field(v, "run_id:"); id != "" {
		ids = append(ids, "run_id "+id)
	}
	if mode := serverMode(v); err == nil && mode != "" && mode != "cluster" {
		return ids, nil
	}
	v, err = conn.Do(ctx, "CLUSTER", "MYID")
	if !Answered(err) {
		return nil, err
	}
	if id, _ := v.(string); err == nil && id != "" {
		ids = append(ids, "cluster node "+id)
	}
	return ids, nil
}

// clusterNodeIDs returns the ids of the nodes of the Redis Cluster behind
// conn, as its CLUSTER NODES reply lists them.
func clusterNodeIDs(ctx context.Context, conn Doer) ([]string, error) {
	v, err := conn.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		if Answered(err) {
			return nil, nil
		}
		return nil, err
	}
	nodes, _ := v.(string)
	var ids []string
	// rueidis over RESP3 keeps the verbatim string's format: "txt:".
	for _, line := range strings.Split(strings.TrimPrefix(nodes, "txt:"), "\n") {
		if id, _, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			ids = append(ids, "cluster node "+id)
		}
	}
	return ids, nil
}

// serverMode returns the mode an INFO server reply gives ("standalone",
// "cluster", "sentinel"), or "" when it gives none: Redis says redis_mode,
// Valkey server_mode too.
func serverMode(info any) string {
	if mode := field(info, "redis_mode:"); mode != "" {
		return mode
	}
	return field(info, "server_mode:")
}

// field returns the value of an INFO reply's line that begins with name,
// or "" when the reply has none.
func field(reply any, name string) string {
	info, _ := reply.(string)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name); ok {
			return v
		}
	}
	return ""
}

// Answered reports whether err, a request's error, is nil or a reply of
// the node, rather than a failure to reach it (a network error, a
// connection closed) or a context that ended. The adapters word the
// node's errors differently (go-redis keeps the "ERR " prefix, rueidis
// drops it), so they are told apart from the failures to reach the node
// instead.
func Answered(err error) bool {
	var ne net.Error
	switch {
	case err == nil:
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return false
	}
	return true
}

// Registry records the identities of the entries of one node list. Its
// zero value is ready for use, and it is safe for concurrent use.
type Registry struct {
	mu    sync.Mutex
	first map[string]int // each identity, to the first entry found with it
}

// Admit records ids, the identities of entry i, and reports whether an
// earlier entry, first, has one of them, id: two votes from one server
// would break the quorum's independence. The identities no entry had are
// recorded either way.
func (r *Registry) Admit(i int, ids []string) (first int, id string, dup bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil {
		r.first = map[string]int{}
	}
	for _, x := range ids {
		if j, seen := r.first[x]; seen && j != i && !dup {
			first, id, dup = j, x, true
		}
	}
	for _, x := range ids {
		if _, seen := r.first[x]; !seen {
			r.first[x] = i
		}
	}
	return first, id, dup
}

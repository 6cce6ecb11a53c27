package nodecheck

import (
	"context"
	"fmt"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/dialreport"
	"github.com/redlock-go/redlock/internal/identity"
)

// registry is what identifies the servers behind the entries of one node
// list (see identity.Of), for Dial's check of duplicates and for the late
// checks of the nodes Dial could not reach, which may run at once.
type registry struct {
	conns []redlock.Conn
	ids   identity.Registry
}

func newRegistry(conns []redlock.Conn) *registry {
	return &registry{conns: conns}
}

// admit records ids, the identities of entry i, and returns an error
// wrapping redlock.ErrDuplicateNode, naming both entries, when an earlier
// entry has one of them: two votes from one server would break the
// quorum's independence.
func (r *registry) admit(i int, ids []string) error {
	if j, id, dup := r.ids.Admit(i, ids); dup {
		return fmt.Errorf("%w: %s and %s reach one server (%s)", redlock.ErrDuplicateNode, r.conns[j].Name(), r.conns[i].Name(), id)
	}
	return nil
}

// lateCheck returns the check of entry i, which did not answer Dial's
// PING, for when it answers (see dialreport.Down.Identify): its identities
// against every other entry's known by then. A node that answers with a
// refusal passes: each call it refuses says so, as it would had its
// configuration changed after Dial.
func (r *registry) lateCheck(i int) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		conn := r.conns[i]
		p := ping(ctx, conn, nil)
		if _, refused := pingVerdict(p); p.err != nil && !refused {
			return fmt.Errorf("%w: %w", dialreport.ErrNoAnswer, p.err)
		}
		if p.err != nil {
			return nil
		}
		ids, _ := identity.Of(ctx, conn)
		return r.admit(i, ids)
	}
}

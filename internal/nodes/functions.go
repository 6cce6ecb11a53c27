package nodes

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redlock-go/redlock/internal/identity"
	"github.com/redlock-go/redlock/internal/wire"
)

// functionCaller is a Conn that can call a Redis function by FCALL, and
// send any command (to load the library by FUNCTION LOAD): the root
// package's Conn with its optional FCall.
type functionCaller interface {
	FCall(ctx context.Context, function string, keys []string, args ...string) (any, error)
	Do(ctx context.Context, args ...string) (any, error)
}

// functionsRetry is how long a node that refused the function library
// (Redis before 7.0, an ACL without FCALL or FUNCTION, a server that cannot
// compile it) runs the scripts by EVALSHA before FCALL is tried again: one
// extra round trip per node and period where the refusal lasts, and a
// server upgraded, or an ACL widened, is used within that time.
const functionsRetry = time.Minute

// functions is how one node runs the library's scripts: as functions of
// wire.Library by FCALL where the node has or accepts it, by EVALSHA where
// it refuses it.
type functions struct {
	// caller is the node's Conn when it can call functions and the Client
	// allows them, on a node that is no Redis Cluster (which would need the
	// library on each of its masters); nil otherwise.
	caller functionCaller

	// refusedAt is when the node last refused the library, in Unix
	// nanoseconds: 0 while it takes FCALL.
	refusedAt atomic.Int64

	// readOnly is the node's Conn when it is a Redis Cluster, where the
	// scripts never run as functions, and can run the scripts that write
	// nothing by EVALSHA_RO, which they then use; nil otherwise: where
	// functions are refused (Redis 6.2, an ACL, an emulator), EVALSHA. readOnlyRefusedAt is when the node last
	// refused EVALSHA_RO (as refusedAt).
	readOnly          readOnlyEvaler
	readOnlyRefusedAt atomic.Int64
}

// readOnlyEvaler is a Conn that runs a script that writes nothing by
// EVALSHA_RO: the root package's ReadOnlyEvaler.
type readOnlyEvaler interface {
	EvalSHARO(ctx context.Context, sha1, source string, keys []string, args ...string) (any, error)
}

// newFunctions returns how conn runs the scripts: by FCALL when enabled
// and conn can, else by EVALSHA.
func newFunctions(conn Conn, enabled bool) *functions {
	f := &functions{}
	if c, ok := conn.(functionCaller); ok && enabled && !IsCluster(conn) {
		f.caller = c
	}
	if c, ok := conn.(readOnlyEvaler); ok && IsCluster(conn) {
		f.readOnly = c
	}
	return f
}

// use reports whether to call the next script by FCALL.
func (f *functions) use() bool {
	return f.caller != nil && !refusedLately(&f.refusedAt)
}

// refuse records that the node refused the library.
func (f *functions) refuse() {
	f.refusedAt.Store(time.Now().UnixNano())
}

// accept records that the node took FCALL.
func (f *functions) accept() {
	f.refusedAt.Store(0)
}

// call runs s on the node: by FCALL of its function where the node takes
// it, loading the library first where the node lacks it (a new node, a
// restart without persistence, FUNCTION FLUSH), and by EVALSHA where the
// node refuses either.
func (f *functions) call(ctx context.Context, conn Conn, s *wire.Script, keys, args []string) (any, error) {
	if !f.use() {
		return f.evalSHA(ctx, conn, s, keys, args)
	}
	v, err := f.caller.FCall(ctx, s.Function, keys, args...)
	if err == nil || !isServerError(err) {
		return v, err
	}
	if functionMissing(err) {
		if err = f.load(ctx); err == nil {
			v, err = f.caller.FCall(ctx, s.Function, keys, args...)
			if err == nil || !isServerError(err) || !functionsRefused(err) {
				return v, err
			}
		}
	}
	if !functionsRefused(err) {
		return v, err // the function's own error: an error reply of lua/
	}
	f.refuse()
	return f.evalSHA(ctx, conn, s, keys, args)
}

// evalSHA runs s on the node by EVALSHA; a script that writes nothing by
// EVALSHA_RO where the node takes it, which a CLIENT PAUSE … WRITE does
// not hold back.
func (f *functions) evalSHA(ctx context.Context, conn Conn, s *wire.Script, keys, args []string) (any, error) {
	if s.ReadOnly && f.readOnly != nil && !refusedLately(&f.readOnlyRefusedAt) {
		v, err := f.readOnly.EvalSHARO(ctx, s.SHA1, s.Source, keys, args...)
		if !isServerError(err) || !readOnlyRefused(err) {
			return v, err
		}
		f.readOnlyRefusedAt.Store(time.Now().UnixNano())
	}
	return conn.EvalSHA(ctx, s.SHA1, s.Source, keys, args...)
}

// refusedLately reports whether at holds a refusal less than
// functionsRetry old.
func refusedLately(at *atomic.Int64) bool {
	t := at.Load()
	return t != 0 && time.Since(time.Unix(0, t)) < functionsRetry
}

// readOnlyRefused reports whether err says that the node does not run the
// script by EVALSHA_RO or EVAL_RO: it does not know them (Redis before
// 7.0), refuses them to the connection's user (NOPERM), or takes a command
// the script reads with as a write (an emulator, such as miniredis, that
// holds INFO for one), which it refused before running it.
func readOnlyRefused(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "read-only scripts") ||
		strings.Contains(msg, "NOPERM") && (strings.Contains(msg, "'evalsha_ro'") || strings.Contains(msg, "'eval_ro'"))
}

// load loads the library on the node. One loaded already (by another
// client of this version) counts as loaded. A refusal is returned as a
// *libraryRefusedError.
func (f *functions) load(ctx context.Context) error {
	_, err := f.caller.Do(ctx, "FUNCTION", "LOAD", wire.Library)
	switch {
	case err == nil || strings.Contains(err.Error(), "already exists"):
		f.accept()
		return nil
	case isServerError(err):
		return &libraryRefusedError{err: err}
	}
	return err
}

// libraryRefusedError is a node's refusal of FUNCTION LOAD.
type libraryRefusedError struct{ err error }

func (e *libraryRefusedError) Error() string {
	return "the node refused to load the function library (FUNCTION LOAD): " + e.err.Error()
}

func (e *libraryRefusedError) Unwrap() error { return e.err }

// functionMissing reports whether err is FCALL's reply for a function the
// node does not have.
func functionMissing(err error) bool {
	return strings.Contains(err.Error(), "Function not found")
}

// functionsRefused reports whether err says that the node does not run
// the library's functions: it refused to load it, does not know FCALL
// (Redis before 7.0), or refuses it to the connection's user (NOPERM).
func functionsRefused(err error) bool {
	var refused *libraryRefusedError
	if errors.As(err, &refused) {
		return true
	}
	msg := err.Error()
	refusedToUser := strings.Contains(msg, "NOPERM") && (strings.Contains(msg, "'fcall'") || strings.Contains(msg, "'function"))
	return refusedToUser || strings.Contains(msg, "unknown command") || strings.Contains(msg, "Function not found")
}

// isServerError reports whether err is a reply of the node, rather than a
// failure to reach it or a context that ended (see identity.Answered).
func isServerError(err error) bool { return err != nil && identity.Answered(err) }

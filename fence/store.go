package fence

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/redlock-go/redlock"
)

// Header is the HTTP header that conventionally carries a fencing token, in
// decimal.
const Header = "X-Fencing-Token"

// DefaultKeyPrefix is prepended to resource names to form their keys when
// Options.KeyPrefix is empty. It keeps resources apart from lock keys of the
// same name.
const DefaultKeyPrefix = "fence:"

var (
	//go:embed write.lua
	writeSource string
	writeSHA1   = sha1Hex(writeSource)
	//go:embed read.lua
	readSource string
	readSHA1   = sha1Hex(readSource)
	//go:embed read_shared.lua
	readSharedSource string
	readSharedSHA1   = sha1Hex(readSharedSource)
)

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// KeyPrefix is prepended to each resource name to form its key. Default
	// DefaultKeyPrefix ("fence:").
	KeyPrefix string
}

// Store performs fenced writes on values held in one Redis server. Each
// resource is a hash with the fields "value" and "fence" (the last accepted
// token, in decimal). A Store is safe for concurrent use; it holds no state
// besides its connection, so any number of Stores and processes can share
// the resources.
type Store struct {
	conn   redlock.Conn
	prefix string
}

// New returns a Store over conn, which can be made with either adapter
// (goredis.New, rueidis.New) or any other redlock.Conn. It does no I/O.
// opts may be nil for the defaults. Closing the Store is closing conn, which
// stays its owner's job.
func New(conn redlock.Conn, opts *Options) *Store {
	prefix := DefaultKeyPrefix
	if opts != nil && opts.KeyPrefix != "" {
		prefix = opts.KeyPrefix
	}
	return &Store{conn: conn, prefix: prefix}
}

// Key returns the Redis key that holds resource.
func (s *Store) Key(resource string) string { return s.prefix + resource }

// Write sets resource to value if token is not below the last token the
// resource accepted, nor below a token that ReadFenced or ReadShared served,
// and records token as the last one; a resource never written accepts any
// token. A holder writes as often as it needs with its lock's token: only a
// lower token, that of a lock granted before, is refused. The comparison and
// the write are one atomic step on the server. It blocks for one round trip,
// bounded by ctx.
//
// A refused write returns a *StaleTokenError, which wraps ErrStaleToken, and
// changes nothing. A zero token fails with ErrInvalidToken, an empty resource
// name with ErrInvalidResource, a nil ctx with redlock.ErrNilContext; other errors come from the connection or
// the server, and leave it unknown whether the write happened.
func (s *Store) Write(ctx context.Context, resource string, token uint64, value string) error {
	if ctx == nil {
		return errNilContext
	}
	if resource == "" {
		return ErrInvalidResource
	}
	if token == 0 {
		return fmt.Errorf("%w: 0", ErrInvalidToken)
	}
	v, err := s.conn.EvalSHA(ctx, writeSHA1, writeSource, []string{s.Key(resource)}, strconv.FormatUint(token, 10), value)
	if err != nil {
		return fmt.Errorf("fence: write %q on %s: %w", resource, s.conn.Name(), err)
	}
	r, ok := v.([]any)
	if !ok || len(r) == 0 {
		return fmt.Errorf("fence: write %q on %s: unexpected reply %v", resource, s.conn.Name(), v)
	}
	if written, _ := r[0].(int64); written == 1 {
		return nil
	}
	if len(r) != 2 {
		return fmt.Errorf("fence: write %q on %s: unexpected reply %v", resource, s.conn.Name(), v)
	}
	last, err := parseFence(r[1])
	if err != nil {
		return fmt.Errorf("fence: write %q on %s: %w", resource, s.conn.Name(), err)
	}
	return &StaleTokenError{Resource: resource, Token: token, Last: last}
}

// ReadFenced reads resource for a holder of token that will write it back (a
// read-modify-write). It refuses, with a *StaleTokenError, a token below the
// last one written or read, and records token as read, so that a holder with
// an older token can no longer write: without it, an old holder's write could
// land between a newer holder's read and write and be overwritten unseen. A
// resource never written reads as "". It blocks for one round trip, bounded
// by ctx. Errors are those of Write.
func (s *Store) ReadFenced(ctx context.Context, resource string, token uint64) (string, error) {
	return s.read(ctx, readSHA1, readSource, resource, token)
}

// ReadShared reads resource for a reader of a read-write lock (a lock taken
// with redlock.WithShared), whose fencing token comes from the same counter
// as the writers'. It refuses, with a *StaleTokenError, a token below the
// last one written or read for a write (ReadFenced): a writer was granted
// the lock after this reader, so the reader's lock has ended. It records
// the greatest token it served, so that a writer granted before this reader
// can no longer write; readers do not refuse one another. Errors are those
// of Write.
func (s *Store) ReadShared(ctx context.Context, resource string, token uint64) (string, error) {
	return s.read(ctx, readSharedSHA1, readSharedSource, resource, token)
}

// read runs one of the read scripts.
func (s *Store) read(ctx context.Context, sha1, source, resource string, token uint64) (string, error) {
	if ctx == nil {
		return "", errNilContext
	}
	if resource == "" {
		return "", ErrInvalidResource
	}
	if token == 0 {
		return "", fmt.Errorf("%w: 0", ErrInvalidToken)
	}
	v, err := s.conn.EvalSHA(ctx, sha1, source, []string{s.Key(resource)}, strconv.FormatUint(token, 10))
	if err != nil {
		return "", fmt.Errorf("fence: read %q on %s: %w", resource, s.conn.Name(), err)
	}
	r, ok := v.([]any)
	if !ok || len(r) != 2 {
		return "", fmt.Errorf("fence: read %q on %s: unexpected reply %v", resource, s.conn.Name(), v)
	}
	if served, _ := r[0].(int64); served == 1 {
		value, _ := r[1].(string)
		return value, nil
	}
	last, err := parseFence(r[1])
	if err != nil {
		return "", fmt.Errorf("fence: read %q on %s: %w", resource, s.conn.Name(), err)
	}
	return "", &StaleTokenError{Resource: resource, Token: token, Last: last}
}

// Read returns resource's value and the last token it accepted. A resource
// never written reads as "", 0. It blocks for one round trip, bounded by ctx.
// A value read is only as current as the moment it was read: to act on it
// safely, write with a token.
func (s *Store) Read(ctx context.Context, resource string) (value string, lastFence uint64, err error) {
	if ctx == nil {
		return "", 0, errNilContext
	}
	if resource == "" {
		return "", 0, ErrInvalidResource
	}
	v, err := s.conn.Do(ctx, "HMGET", s.Key(resource), "value", "fence")
	if err != nil {
		return "", 0, fmt.Errorf("fence: read %q on %s: %w", resource, s.conn.Name(), err)
	}
	r, ok := v.([]any)
	if !ok || len(r) != 2 {
		return "", 0, fmt.Errorf("fence: read %q on %s: unexpected reply %v", resource, s.conn.Name(), v)
	}
	if r[1] == nil {
		return "", 0, nil
	}
	last, err := parseFence(r[1])
	if err != nil {
		return "", 0, fmt.Errorf("fence: read %q on %s: %w", resource, s.conn.Name(), err)
	}
	value, _ = r[0].(string)
	return value, last, nil
}

// parseFence decodes a stored token.
func parseFence(v any) (uint64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("stored fence %v is not a string", v)
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stored fence %q is not a token: %w", s, err)
	}
	return n, nil
}

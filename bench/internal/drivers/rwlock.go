package drivers

import "context"

// sharedDriver is a Driver whose library has read-write locks.
type sharedDriver interface {
	// AcquireShared blocks until the lock named key is held as a reader,
	// or ctx ends.
	AcquireShared(ctx context.Context, key string) (held any, err error)
}

// AcquireShared takes the read-write lock named key as a reader with d,
// blocking until it is held or ctx ends; held is what d.Release needs. A
// library with read-write locks takes it its own way; for the others a
// reader takes the plain mutex, as a writer does (Driver.Acquire): the
// nearest they offer, which admits one reader at a time.
func AcquireShared(ctx context.Context, d Driver, key string) (any, error) {
	if s, ok := d.(sharedDriver); ok {
		return s.AcquireShared(ctx, key)
	}
	return d.Acquire(ctx, key)
}

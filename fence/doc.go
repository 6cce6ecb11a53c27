// Package fence checks fencing tokens on the side of the protected resource.
//
// A lock cannot, by itself, stop a holder that stalls past the end of its
// validity: a garbage-collection pause, a SIGSTOP, swapping, or a request
// delayed in the network can make a write arrive after the lock expired and
// another client took it and wrote. No lock service can prevent this; the
// resource has to. Each acquisition of a lock carries a fencing token larger
// than that of any earlier acquisition of the same lock (Lock.Fence in package
// redlock). The holder sends its token with every write; the resource keeps
// the highest token it has seen and refuses any write whose token is below
// it, in the same atomic step as the write. The stalled holder's late write
// then carries an older token than the new holder's and is refused.
//
// A token equal to the highest seen is the current holder's own: a holder
// writes as many times as it needs under one lock. Two holders that exclude
// each other (of a mutex, of one permit, or a writer and anyone else) never
// have equal tokens, so refusing lower tokens is enough to tell them apart.
//
// # SQL
//
// Keep the last accepted token in a column beside the data and make the
// comparison part of the update:
//
//	UPDATE accounts SET balance = $3, fence = $1 WHERE id = $2 AND fence <= $1
//
// No row updated means the token is stale (or the row does not exist): the
// holder has lost the lock and must stop.
//
// # HTTP
//
// The client sends the token in a header, and the service checks it against
// the highest token it has seen for the resource, atomically with the write,
// and answers 409 Conflict when it is below:
//
//	req.Header.Set(fence.Header, strconv.FormatUint(lock.Fence(), 10))
//
//	// In the service, under the resource's own transaction or mutex:
//	token, err := strconv.ParseUint(r.Header.Get(fence.Header), 10, 64)
//	if err != nil || token < last[resource] {
//		http.Error(w, "stale fencing token", http.StatusConflict)
//		return
//	}
//	last[resource] = token
//	// ... apply the write ...
//
// # Redis
//
// Store does the same for values held in a Redis server: Write runs the
// comparison and the write in one Lua script and returns an error wrapping
// ErrStaleToken when the token is below the highest one seen.
//
// A holder that reads the resource and writes back something computed from
// it must read with ReadFenced. Checking writes alone is not enough: a newer
// holder reads, a stalled older holder's write lands (its token is not
// below the last write's), and the newer holder's write then
// overwrites it, losing that update. ReadFenced records the reader's token so
// that the older write is refused. The same holds for SQL: read with
// SELECT ... FOR UPDATE after raising the fence column, in one transaction.
//
// # Read-write locks
//
// The readers and the writers of a read-write lock (redlock.WithShared) draw
// their tokens from one counter, so a token is above those of every grant
// before it, read or write. A reader reads with ReadShared: it is refused
// when a write, or a writer's fenced read, carries a greater token (a writer
// was granted after the reader, whose lock has therefore ended), and never
// because of another reader's token, since readers hold the lock together.
// The greatest token a shared read was served is recorded, and a write or a
// fenced read below it is refused: the writer's lock ended before those
// readers were granted. In SQL, keep that greatest reader token in a column
// of its own, raised by each shared read, and add "AND readers <= $1" to the
// writers' update.
//
// # Caveats
//
// The last accepted token must be as durable as the data it guards: a store
// that forgets it (a Redis restarted without its data, a column reset by a
// restore) accepts stale tokens again. Run Store's server with appendfsync
// always, and keep it apart from the lock nodes, whose data is disposable.
// Fencing only protects writes that go through the check: every writer of
// the resource must send a token.
package fence

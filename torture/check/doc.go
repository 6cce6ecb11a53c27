// Package check decides whether the history of a torture run is correct.
// Six checkers of safety look at it from different sides:
//
//   - Linearizable: the lock's acquisitions and releases, with the end of
//     each lock's validity taken as its release if that came first, are
//     linearizable against a mutex, or against a read-write lock when some
//     holders are readers (checked by porcupine).
//   - Overlap: no two holders' intervals [granted, min(released, validity
//     deadline)] overlap, unless both are readers of a read-write lock: a
//     writer's never overlaps another writer's or a reader's.
//   - OverLimit: no semaphore has more holders at once than its limit,
//     counted over the same intervals.
//   - LostUpdate: the register never accepts a write computed from a value
//     older than the last accepted write, which would lose that write.
//   - FenceOrder: fencing tokens strictly increase in grant order: a grant
//     that began after another completed has a larger token. Readers and
//     writers of a name draw from one counter, so the order holds across
//     both kinds.
//   - Observed: each observer of a leader election saw leaders in
//     strictly increasing terms, each one a grant of that term: never an
//     older leader after a newer one, never a leader nobody elected.
//
// A semaphore's permits are locks of their own, each with its own fencing
// tokens and its own register, and so are the locks of several names taken
// together (Client.AcquireAll): the checkers of one lock run on each key
// held apart, and the lost-update checker on each register apart.
//
// A seventh checker, Liveness, looks at waiting rather than safety: no
// waiter that could have been served waits past the bound the scenario
// states, and no fewer acquisitions are served than the share it states
// (see Bound). A waiter in Acquire or AcquireAll could be served all
// along, in its turn: its wait runs from its call to its grant or give-up.
// A worker that loops TryAcquire is promised no turn, only that the lock
// does not stay free for long while it tries: its wait is the longest
// stretch in which it tried and the lock was free for it.
//
// Each returns violations with the time and workers involved, for the
// report.
package check

// Package check decides whether the history of a torture run is correct.
// Five checkers look at it from different sides:
//
//   - Linearizable: the lock's acquisitions and releases, with the end of
//     each lock's validity taken as its release if that came first, are
//     linearizable against a mutex (checked by porcupine).
//   - Overlap: no two holders' intervals [granted, min(released, validity
//     deadline)] overlap.
//   - OverLimit: no semaphore has more holders at once than its limit,
//     counted over the same intervals.
//   - LostUpdate: the register never accepts a write computed from a value
//     older than the last accepted write, which would lose that write.
//   - FenceOrder: fencing tokens strictly increase in grant order: a grant
//     that began after another completed has a larger token.
//
// A semaphore's permits are locks of their own, each with its own fencing
// tokens and its own register: the checkers of one lock run on each key
// held apart, and the lost-update checker on each register apart.
//
// Each returns violations with the time and workers involved, for the
// report.
package check

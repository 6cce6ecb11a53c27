// Package redlock is a distributed lock over N independent Redis masters,
// implementing the Redlock algorithm; with one node it is the single-instance
// Redis lock.
//
// # Use
//
//	client, err := goredis.Dial(ctx, []string{"redis://a:6379", "redis://b:6379", "redis://c:6379"}, nil)
//	...
//	err = client.Do(ctx, "orders:42", func(ctx context.Context) error {
//		// Runs while the lock is held and renewed; ctx is cancelled if it is lost.
//		lock, _ := redlock.LockFromContext(ctx)
//		return process(ctx, lock.Fence()) // the fencing token, for the resource
//	})
//
// Acquire blocks until the lock is acquired or its context ends; TryAcquire
// makes one attempt. A Lock can be extended, renewed in the background
// (WithAutoRenew), watched (Done, Err) and released; Do runs a function
// under a renewed lock with a context that ends when the lock is lost, and
// from which LockFromContext returns the lock. Failures wrap
// sentinel errors (ErrNotAcquired, ErrLockLost, ErrNotHeld, ...) in a
// *QuorumError that says what each node answered.
//
// A lock that reaches its deadline unreleased is lost (ErrLockLost) when
// its holder tried to keep it, by WithAutoRenew, Do or a call of Extend,
// and could not; it has expired (ErrLockExpired) when nobody tried, as
// with a lock taken by TryAcquire once per period and left to end by
// itself. Either way Done closes and the holder must stop; only a loss is
// an incident, counted in redlock.locks.lost and logged as a warning.
//
// A lock's TTL is at most Options.RecoveryDelay (30 s by default; see
// Restart quarantine). Work that may outlast it keeps a shorter TTL and
// renews it (Do, WithAutoRenew, or Extend in time); a longer TTL needs
// every client of the nodes to raise RecoveryDelay together.
//
// Dial (goredis.Dial, rueidis.Dial) fails when a node answers but refuses
// its URL (credentials, database), however few such nodes there are, and
// tolerates nodes that cannot be reached, which Client.UnreachableAtDial
// lists.
//
// Over another client library, New takes Conns of your own: an adapter
// implements Conn's four methods (Name, Do, EvalSHA, Close), and may add
// its optional capabilities, each an interface of one method: Listener
// (waiters wake at a release instead of polling), ReplicaWaiter
// (Options.WaitReplicas), ClusterConn (a Redis Cluster as one node),
// ContextHonourer (a Conn that may not return at its deadline),
// FunctionCaller (the scripts as Redis 7 functions, by FCALL) and
// ReadOnlyEvaler (a cluster's reads by EVALSHA_RO, which a write pause
// lets through). Of two Conns or more, New reads each server's identity
// at its first request (see New).
//
// # Semaphores and read-write locks
//
//	permit, err := client.Acquire(ctx, "partner-api", redlock.WithLimit(5)) // one of 5 permits
//	read, err := client.Acquire(ctx, "table:orders", redlock.WithShared())  // a reader
//
// WithLimit(n) takes one of n permits of a name: permit i is the mutex
// name:permit:i, so each permit has one holder and the name at most n, with
// everything a lock has (Lock.Key names the permit; its fencing token counts
// per permit). A quorum of counters could not bound the holders: with n = 2
// on three nodes, three clients can each be counted by a different majority.
// WithShared takes a name as a reader of a read-write lock whose writers
// are the plain locks of that name: readers are a sorted set at the lock
// key, so a writer's SET NX fails while one holds, and a node refuses
// readers while a writer holds the key or waits for it since before them,
// in Acquire or in AcquireAll (where a set keeps its place in the queue of
// each of its keys while it waits for any of them, so readers of a free key
// of the set wait for the set). Readers and writers waiting in Acquire are
// served first come, first served, so that neither kind starves the other;
// the readers that come between two writers hold together. Readers and writers share the
// key's fencing counter; see fence.Store.ReadShared for the resource's side.
// SAFETY.md has the argument for both.
//
// # Several keys
//
//	locks, err := client.AcquireAll(ctx, []string{"account:1", "account:2"})
//	...
//	defer locks.Release(ctx)
//
// AcquireAll takes the locks of several names all or nothing: each attempt
// asks every node for every key at once, and when a key is refused, it
// releases at once the keys that were granted, then waits for the release
// of a refused key or a retry delay. No client holds some keys of a set
// while it waits for the others, so clients asking for overlapping sets,
// in whatever order, do not deadlock; the nodes keep the keys that are
// free for the set waiter that came first, so that it is not starved by
// later overlapping sets. Each key is a lock of its own, with
// its validity, fencing token and renewal, so the keys may lie in
// different hash slots of a Redis Cluster. The returned Locks extends,
// watches and releases them together: Until is the earliest deadline, and
// Done closes as soon as one lock is lost or released.
//
// # Leader election
//
//	election, err := client.NewElection("scheduler")
//	err = election.Campaign(ctx, "host-a:8080") // blocks until elected
//	...                                          // lead until election.Done()
//	election.Resign(ctx)                         // the next is elected at once
//
// An Election has the semantics of etcd's concurrency.Election over a
// lock of the name, renewed in the background: Campaign, Resign, Leader
// (the current leader's value, term and since when), Observe (a channel
// of changes, vacancies included), Done and Err (the lead lost, a loss
// margin before another candidate can be elected). The term is the lock's
// fencing token, which strictly increases from one leader to the next.
// Unlike etcd's, a leader's value stands for its whole term: there is no
// Proclaim.
//
// # Lock-delay
//
// WithLockDelay(d) keeps a lock that ends without a release (its holder
// died, paused or lost the nodes) out of reach for d more, as Chubby's
// lock-delay does, for resources that can check no fencing token; a
// release frees it at once. The nodes keep its key d longer than the TTL;
// it costs no request.
//
// # Operating the locks
//
// Every grant names its holder: Options.Owner, or WithOwner per call (by
// default "host:pid"), and the time the grant began travel in the lock's
// token, the plain string the lock key holds, at no extra key or command.
// Inspect shows them per node (NodeState.Owner, Since, ReaderGrants);
// List walks the nodes' keys with SCAN, a few hundred at a time, and
// returns the locks held under a prefix, merged over the nodes, with
// their holders, TTL and waiting clients. ForceRelease frees a stuck lock
// without its token and wakes its waiters; its holder learns it at its
// next extension (ErrTakenOver). Check and CheckFence are Chubby's
// sequencer check: whether a token, or a fencing token, is still the
// holder's on a quorum, for a resource server that can reach the nodes;
// the answer may be stale by the check's own duration and the resource's
// delay in acting on it (see Client.Check).
//
// # The algorithm
//
// An acquisition runs, on every node at once, one script that does SET key
// token NX PX ttl (besides the fencing and quarantine steps below), with a
// per-node timeout (Options.NodeTimeout) small against the TTL, which rises
// while replies come late, as on a host whose cores are all busy, up to
// Options.MaxNodeTimeout (a quarter of the TTL, at most 400 ms, by
// default). It succeeds
// when at least N/2+1 nodes granted it and the validity left is positive:
//
//	validity = ttl - elapsed - (ttl*DriftFactor + 2ms)
//
// where elapsed comes from the monotonic clock, measured from before the
// first request. Otherwise the key is deleted on every node, answered or
// not, by a script that deletes it only while it holds this token. The token
// is 20 random bytes from crypto/rand, fresh for every attempt. Extension and
// release are compare-and-act scripts sent by EVALSHA, or on Redis 7 called
// as the functions of one library by FCALL (see Options.DisableFunctions
// and FunctionCaller). The key on the wire is
// the name as given (plus an optional Options.KeyPrefix) holding a random
// string, as redsync and node-redlock write it, so locks taken by those
// libraries on the same nodes and names exclude ours, and ours theirs.
//
// A call returns as soon as the answers settle it, so a slow or dead
// minority of nodes does not slow it (a failed TryAcquire waits for its
// clean-up: see below); anything sent later to a node that had not
// answered waits for its earlier request, so a release never overtakes
// its acquisition, nor a client's next acquisition of a key its release of
// that key. Concurrent calls share script calls: while a node has two
// under way, the requests of other calls to it queue and leave together in
// the next, through a script that runs each as if alone; a lone call is sent
// at once, by itself.
//
// The goroutines of one Client waiting for the same key queue in order
// behind one that tries the nodes, so that they never split the votes among
// themselves; likewise, while one of them is in TryAcquire on a key, the
// others calling TryAcquire on it wait for its attempt and fail, whether
// that attempt won or not, instead of making their own. A failed TryAcquire, whose
// caller may try again at once, returns only once every node has answered
// it and its clean-up (within the node timeout) and, when the key was
// held, after a random pause of up to twice what the attempt took, so that
// clients calling TryAcquire in a loop do not send an attempt while their
// last one still queues on the slower nodes: each node would grant a
// different client, and none win. When the Client releases a lock that one
// of its goroutines waits for, the release carries that goroutine's
// attempt: on each node the release and the attempt run in one script
// call, in that order, so the lock changes hands within one round trip,
// unless another client queued for the key first: the attempt then
// defers to it, and the release wakes it. Other releases announce
// themselves on a per-key pub/sub channel (see Listener; on a Redis Cluster, a
// shard channel of the key's slot): a waiting Acquire wakes once a quorum
// of nodes announced one. Across clients, a client
// refused in Acquire enters the key's queue on each node, and keeps its
// place there until its release of the lock it won takes it out on every
// node, so that the nodes agree on who is next. A release names the first
// two clients in line, on each one's own channel for the key: only they
// hear it and wake, the second a node timeout after the first, so that a
// crowd of processes does not split the votes at every release, nor read
// every announcement, and the first in line is not raced by the second. A release
// that names nobody goes to the key's channel, and where no client waits
// (the key has no waiting mark, which every waiting client sets) a
// release reads no queue and announces nothing. A client queued behind the
// ones the next release names tries only every half second to second
// meanwhile, whatever Options.Retry says; one whose retry pauses are
// longer than that renews its place every second without trying, so
// that the release that makes it next still names it. A jittered retry
// (Options.Retry) covers locks that expire instead of being released.
// While so many nodes time out, or are too far behind to be sent a
// request, that no quorum answers, a waiter backs off, up to a second
// between attempts, so that a crowd does not keep overloaded nodes so.
//
// A node that stops answering costs bounded memory: its queue of calls has
// a bound past which calls fail at once, and Close returns within four
// per-node timeouts.
//
// # Architecture
//
// The package is cut in layers, each a package that imports only the ones
// below it:
//
//	redlock           the API and the Redlock policy: quorum, validity,
//	                  fencing, the restart quarantine, the retry loop
//	internal/wait     this process's waiting: the turns of a Client's
//	                  goroutines on each key, the attempt offered to the
//	                  Client's own release, the wake-ups on releases
//	internal/nodes    the nodes: one request to every node at once, the
//	                  answers collected until they settle it, a deadline
//	                  per node, each node's queue where concurrent
//	                  requests share script calls, and the order that keeps
//	                  a request behind the key's earlier one on a node
//	internal/wire     what goes on the wire: every key and channel name,
//	                  where it goes on a Redis Cluster, the lock tokens,
//	                  the Lua scripts
//
// One uncontended Acquire goes down them once: it takes the key's turn
// among the Client's goroutines (wait), makes an attempt: a fresh token and
// a request (wire) sent to every node at once (nodes), whose answers it
// weighs (quorum and validity, then the fencing token); and it returns the
// Lock. A failed attempt goes on in the retry loop that every shape of
// acquisition shares: a lock, a permit, a reader, the locks of several
// keys; each supplies its attempt and what its waits end on.
//
// # Safety model
//
// At most one client holds a lock during its validity (Lock.Until) provided
// that:
//
//   - the nodes' clocks run at most DriftFactor (1%) faster than the client's
//     monotonic clock, and no node's wall clock jumps: Redis expires keys by
//     wall-clock time, so a forward jump on a node expires a key early;
//   - a node does not lose keys it acknowledged except by restarting or by
//     failing over to a replica, which the restart quarantine below covers
//     whatever the node's persistence, and no maxmemory-policy can evict
//     keys (use noeviction);
//   - the holder stops touching the protected resource by the validity
//     deadline. A process pause (GC, SIGSTOP, swapping) or a delayed packet
//     after that deadline breaks this, and no lock service can prevent it by
//     itself: the protected resource must check the fencing token
//     (Lock.Fence), as the fence package does.
//
// Done, Err and Do's context signal the end of a lock, lost or expired, by
// a local timer a margin before the validity deadline (Options.LossMargin:
// by default a tenth of the TTL, at least 100 ms and at most a fifth of
// it), so that a holder that
// reacts to them still has validity to stop in, not when a server notices.
// While
// a majority of nodes is up, locks can be acquired and released; a lock whose
// holder crashed becomes free when its TTL passes, so a partition costs up to
// one TTL of availability.
//
// # Fencing tokens
//
// Every node keeps, beside each lock key, a counter: "redlock:fence:"
// followed by the lock key, which expires the lock's TTL plus
// Options.RecoveryDelay (at least a second) after the key's last acquisition. The acquire script raises it when it grants the lock, to the
// largest of the old value plus one, the caller's clock in microseconds (the
// same on every node) and the node's clock less a second. The lock's token (Lock.Fence) is the largest
// counter among the nodes that granted it; when they disagree, a second
// request raises the others to the token (a node whose counter is gone, to
// at least the node's clock less a second), and the lock is handed out only
// once a quorum holds the token while still holding the lock.
//
// Tokens increase: lock 1 is handed out with token T only once a quorum Q1
// holds counters of at least T. Lock 2, from an acquisition that started
// after that, is granted by a quorum Q2, which shares a node n with Q1; its
// script ran on n after n's counter reached T, and a counter never decreases
// while the node keeps its data, so n answered at least T+1, and lock 2's
// token, the largest answer in Q2, is above T. No clock is involved. (A
// node counts only while lock 1's key is on it, so a delayed request of an
// acquisition that started earlier, arriving once lock 1's key left n, also
// finds n's counter at T or above.) A node that lost its data (or left a
// counter idle until it expired) starts again from the clocks, and every token
// is at most the time it was handed out plus how far the fastest clock, of a
// client or a node, runs ahead. With the restart quarantine such a node
// grants nothing for RecoveryDelay after it came back, so its new counter is
// above T as long as no clock runs ahead of another by more than
// RecoveryDelay less a second: the order survives even the loss of every
// node's data at once. The second request is needed only when nodes
// disagree, which the shared caller's clock makes rare: a new key or a node
// that missed acquisitions costs nothing extra.
//
// # Restart quarantine
//
// A node that restarted without its data, or reloaded a snapshot or an AOF
// older than its last grants, or a replica that took over, would grant a
// lock that the other nodes still hold for someone else. Each node therefore
// keeps a restart marker, the key "redlock:marker", without a TTL, and beside
// it the run_id of the Redis process that wrote it ("redlock:process"). The
// acquire script, finding the marker missing or written by another process,
// writes the node's time and run_id into them and refuses to vote
// (OutcomeRecovering) until Options.RecoveryDelay has passed on the node's
// clock. Any lock granted before the restart lives at most its TTL, which
// New, Acquire and Extend keep at or below RecoveryDelay, so it has expired
// by the time the node votes again. Client.MarkReady marks a brand-new, empty
// deployment ready without waiting; unless forced, it refuses
// (ErrNotBrandNew) a deployment where a node restarted, or where some nodes
// are ready while others are recovering. Options.DisableQuarantine turns
// the mechanism off. SAFETY.md has the whole picture: guarantees,
// assumptions, what each mechanism costs, and what remains open.
//
// # Observability
//
// A Client reports to what its Options are given, and to nothing global:
// Options.Logger (log/slog), Options.MeterProvider and
// Options.TracerProvider (OpenTelemetry), under the instrumentation scope
// "github.com/redlock-go/redlock". With none of them, the calls do nothing
// more than without this section (BenchmarkCycle allocates as much per
// cycle). With any of them, every lock's deadline is watched by a timer,
// as WithAutoRenew does, so that a loss is reported when it happens.
//
// Metrics (a lock's key is never an attribute: keys are unbounded):
//
//	redlock.acquisitions           counter {acquisition}  redlock.call, redlock.outcome
//	    Acquire (call acquire) and TryAcquire (try_acquire) calls by how they
//	    ended: acquired; conflict (held elsewhere); unavailable (too few nodes
//	    answered, or too late); recovering (too many nodes in the restart
//	    quarantine); config (nodes refuse for a reason no retry fixes);
//	    cancelled (the caller cancelled, or its context ended before a node
//	    refused). An Acquire that gave up waiting counts by its last attempt.
//	redlock.acquire.duration       histogram s            redlock.call, redlock.outcome
//	    Time from the call to its result: how long callers wait.
//	redlock.extensions             counter {extension}    redlock.call, redlock.outcome
//	    Extensions by Extend (extend), auto-renewal (renew) and ExtendToken
//	    (extend_token): extended, not_extended (too few nodes in time; still
//	    valid), lost, released (before the call), limit (MaxExtensions),
//	    expired (the lock, never extended, had expired before the call).
//	redlock.releases               counter {release}      redlock.call, redlock.outcome
//	    Release (release) and ReleaseToken (release_token): released,
//	    not_held (it had expired: the holder overran its TTL), not_released
//	    (too few nodes answered; the lock stands until its TTL passes),
//	    already_released.
//	redlock.handoffs               counter {handoff}      redlock.outcome
//	    Releases that carried the attempt of a goroutine of the same Client
//	    waiting in Acquire, by whether it acquired (acquired, not_acquired:
//	    also when it deferred to another client queued first).
//	redlock.lock.hold.duration     histogram s            redlock.outcome
//	    Time from a grant to the lock's release (released), loss (lost) or
//	    expiry (expired).
//	redlock.locks.lost             counter {lock}         redlock.reason
//	    Locks their holder tried to keep (WithAutoRenew, Do, Extend) and
//	    lost before their release: renewal_failed (auto-renewal failed
//	    until the loss margin), taken_over (an extension found a majority no
//	    longer holding it), deadline_passed (extended before, but not again
//	    in time, or renewal reached MaxExtensions), forced_by_operator (an
//	    extension found it taken by ForceRelease).
//	redlock.locks.expired          counter {lock}
//	    Locks neither renewed nor extended that reached their deadline
//	    (less the loss margin) before their release: the end their TTL
//	    set, not an incident.
//	redlock.locks.held             updowncounter {lock}
//	    Locks the client holds now.
//	redlock.node.requests          counter {request}      redlock.node, redlock.op, redlock.outcome
//	    Each node's requests (op acquire, extend, release, inspect,
//	    mark_ready; release includes the clean-up after a failed attempt,
//	    sent only to the nodes that did not refuse it) by its outcome: ok, held, recovering, timeout, error, no_answer (the
//	    call was decided before it answered). redlock.node is Conn.Name.
//	redlock.node.request.duration  histogram s            redlock.node, redlock.op
//	    Each node's reply time, for the requests it served (ok, held,
//	    recovering): compare with Options.NodeTimeout, which rises while
//	    replies come late, up to Options.MaxNodeTimeout.
//	redlock.node.timeout           gauge s                redlock.client
//	    The per-node timeout of the client's requests at its default TTL
//	    as it stands: Options.NodeTimeout, raised while replies come late
//	    (a slow node, a busy host), up to Options.MaxNodeTimeout. Reported
//	    until Close; redlock.client is a random id of the Client, so that
//	    the Clients of one meter report apart.
//
// Histograms have buckets from 0.1 ms to 60 s (durations of waits and
// requests) and from 1 ms to an hour (hold times).
//
// Spans: "redlock.acquire" for Acquire and TryAcquire, "redlock.extend"
// for Extend and ExtendToken, "redlock.release" for Release and
// ReleaseToken, each a child of the span in the call's context, with the
// attributes redlock.key, redlock.call, redlock.ttl_ms, redlock.outcome,
// redlock.nodes_ok, and for an acquisition redlock.attempts and
// redlock.fence. An acquisition has an event "redlock.attempt" per
// attempt, and each span an event "redlock.node" per node answer to the
// request that decided it (redlock.node, redlock.outcome,
// redlock.latency_ms, redlock.error, redlock.recovering_left_ms). A
// failed call's span has status Error and the error. Auto-renewals are
// measured but not traced: each would start a trace of its own.
//
// Log records mark transitions, never requests, so that a node that is
// down logs a few lines per outage:
//
//   - "redlock: lock lost" (Warn; key, reason, held_for, error), and
//     "redlock: lock expired" (Debug; key, held_for, error) for a lock
//     nobody tried to keep, which is no more an incident than a release;
//   - "redlock: node failing" (Warn; node, op, outcome, error), once a node
//     failed three requests in a row, and "redlock: node answering again"
//     (Info; node, failing_for) once it answered three in a row;
//   - "redlock: node recovering from a restart, not voting" (Info; node,
//     votes_in) and "redlock: node voting again after its restart
//     quarantine" (Info; node), from the answers to acquisitions;
//   - "redlock: release did not reach a quorum" (Warn; key, nodes: each
//     node's answer), and "redlock: background release finished" (Info) or
//     "given up" (Warn; nodes still holding the key until its TTL passes):
//     at most one record of each every 10 s, which says how many it stands
//     for (more_since_last);
//   - "redlock: lock forced free" (Warn; key, by, nodes, owners), for each
//     ForceRelease that freed a lock;
//   - "redlock: some metrics are not recorded" (Warn; error), from New,
//     when the MeterProvider fails to create an instrument.
package redlock

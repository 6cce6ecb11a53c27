package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redlock-go/redlock/internal/wait"
	"github.com/redlock-go/redlock/internal/wire"
)

// Errors of leader elections.
var (
	// ErrNoLeader means the election has no leader: no client holds its
	// lock on a quorum of nodes.
	ErrNoLeader = errors.New("redlock: no leader")
	// ErrLeaderUnknown means too few nodes answered to tell who leads.
	ErrLeaderUnknown = errors.New("redlock: leader unknown")
)

// Leader is an election's leader as the nodes hold it.
type Leader struct {
	// Value is what the leader campaigned with (Election.Campaign): the
	// owner of its lock (WithOwner).
	Value string
	// Term is the leader's fencing token (its Lock.Fence): it strictly
	// increases from one leader to the next, so a resource can refuse an
	// older leader's writes. It is 0 for a lock of another library, which
	// has none.
	Term uint64
	// Since is when the leader's winning campaign attempt began, by its
	// own clock, as its lock's token says (NodeState.Since); zero for a
	// lock of another library.
	Since time.Time
	// Token is the leader's lock token (Lock.Token).
	Token string
}

// Vacant reports that l is the election's absence of a leader, as Observe
// reports it.
func (l Leader) Vacant() bool { return l.Token == "" }

// Election is a leader election on one name, with the semantics of etcd's
// concurrency.Election: candidates Campaign with a value and block until
// elected; the leader leads until it resigns or loses the lead; anyone may
// read the current leader (Leader) or follow the changes (Observe). Unlike
// etcd's, a leader's value stands for its whole term: there is no Proclaim.
//
// The leader holds the name's lock, renewed in the background
// (WithAutoRenew), with every guarantee of a lock: at most one leader
// within its validity, a term (fencing token) that strictly increases from
// one leader to the next, and the end of its lead signalled by Done a loss
// margin before its validity ends (Options.LossMargin), so that it can
// stop acting as leader before another candidate can be elected. Resign
// releases the lock, and the next candidate is elected at once; a leader
// that dies or is cut off is followed within the TTL it had left (plus
// its lock-delay, WithLockDelay, if any).
//
// An Election is safe for concurrent use. One Election campaigns for one
// candidate: a process with two candidates uses two Elections. Make one
// with Client.NewElection: the zero value is not usable.
type Election struct {
	client *Client
	name   string
	key    string
	opts   []LockOption
	ttl    time.Duration

	mu   sync.Mutex
	lock *Lock // the lead, while this candidate leads or since it lost it
	// resigned is the term of the last lead, once Resign ended it.
	resigned uint64
	// unreleased is the last lead when Resign failed to release it: the
	// next Resign, or Campaign, tries again.
	unreleased *Lock
	// campaigns ends each Campaign call under way, by its context.
	campaigns map[*context.Context]context.CancelCauseFunc
}

// NewElection returns the election on name, whose leader holds the lock of
// that name. opts apply to the leader's lock: WithTTL (how long a dead
// leader blocks the election; its lead is renewed meanwhile) and
// WithLockDelay; WithLimit and WithShared make no sense here and fail with
// ErrInvalidOptions, and so does WithOwner: the leader's owner is the value
// it campaigns with. The name fails as a lock's does (ErrInvalidKey), and
// a Client closed already with ErrClosed.
func (c *Client) NewElection(name string, opts ...LockOption) (*Election, error) {
	if c.closing() {
		return nil, ErrClosed
	}
	key, cfg, err := c.lockRequest(name, opts)
	if cfg.named {
		return nil, fmt.Errorf("%w: an election's owner is the value each candidate campaigns with: no WithOwner", ErrInvalidOptions)
	}
	if err != nil {
		return nil, err
	}
	if cfg.limited || cfg.shared {
		return nil, fmt.Errorf("%w: an election's lock is a plain lock: no WithLimit, no WithShared", ErrInvalidOptions)
	}
	return &Election{client: c, name: name, key: key, opts: slices.Clone(opts), ttl: cfg.ttl,
		campaigns: map[*context.Context]context.CancelCauseFunc{}}, nil
}

// Campaign blocks until this candidate is elected with value, or ctx ends.
// Elected, it leads until Resign, or until it loses the lead, which Done
// and Err signal. The value is the owner of the leader's lock (WithOwner),
// which Leader and Observe show to everyone: 1 to MaxOwnerBytes bytes of
// printable ASCII without spaces, such as "host-a:8080", or the call fails
// with ErrInvalidOwner. A candidate that leads already returns nil at
// once when value is its lead's, and ErrInvalidOptions when it is another:
// a leader's value stands for its whole term (there is no Proclaim). Its error is otherwise Acquire's: ErrNotAcquired
// joined with ctx's error when ctx ended first, ErrClosed once the Client
// closed (a leading candidate's too). A waiting candidate is
// elected at once after the leader's Resign, and as the lead's TTL runs
// out after a leader that stopped without one. Waiting candidates are
// elected in the order they began to campaign, each keeping its place in
// the nodes' queue however long the lead lasts. Of several Campaign calls
// of one candidate at once, the first elected ends the others, which
// return as a call made once it leads: nil with its value,
// ErrInvalidOptions with another.
func (e *Election) Campaign(ctx context.Context, value string) error {
	if err := e.client.checkCall(ctx); err != nil {
		return err
	}
	if err := checkOwner(value, "Campaign's value"); err != nil {
		return err
	}
	e.mu.Lock()
	lead := e.lock
	leading := lead != nil && lead.Err() == nil
	unreleased := e.unreleased
	e.unreleased = nil
	e.mu.Unlock()
	if leading {
		return leadsWith(lead, value)
	}
	if unreleased != nil {
		// The last lead still stands where Resign could not release it:
		// waiting for its TTL would keep every candidate out. Failing
		// again, it stays for the next Resign or Campaign.
		if err := unreleased.Release(ctx); errors.Is(err, ErrNotReleased) {
			e.mu.Lock()
			if e.lock == nil && e.unreleased == nil {
				e.unreleased = unreleased
			}
			e.mu.Unlock()
		}
	}
	// A resign wakes the waiting candidates at once; a lead that ends
	// without one is announced by nobody, so the wait is also nudged into
	// an attempt when the lead's key expires on a quorum, rather than a
	// retry pause later. One Acquire waits throughout, keeping this
	// candidate's place in the queue: candidates are elected in the order
	// they came.
	nudge := make(chan struct{}, 1)
	stopNudging := e.nudgeAtLeadExpiry(ctx, nudge)
	defer stopNudging()
	actx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if lead := e.register(&actx, stop); lead != nil {
		// Another Campaign call won since this one began: it would wait
		// for ever behind its own candidate's lead.
		return leadsWith(lead, value)
	}
	opts := append(slices.Clone(e.opts), WithAutoRenew(), WithOwner(value), withNudge(nudge))
	lock, err := e.client.Acquire(actx, e.name, opts...)
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.campaigns, &actx)
	if err != nil {
		if errors.Is(context.Cause(actx), errLeadsAlready) && ctx.Err() == nil && e.lock != nil {
			// Another Campaign call of this candidate won: as for a
			// candidate that leads already, nil when it won with this
			// call's value.
			return leadsWith(e.lock, value)
		}
		return err
	}
	e.lock, e.unreleased = lock, nil // elected: the old lead is gone
	for _, other := range e.campaigns {
		other(errLeadsAlready)
	}
	return nil
}

// register records the end of a Campaign call under way, ctx's stop, for
// the call that wins to end it; it returns the lead instead when this
// candidate leads already, won by another call since this one began.
func (e *Election) register(ctx *context.Context, stop context.CancelCauseFunc) (lead *Lock) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock != nil && e.lock.Err() == nil {
		return e.lock
	}
	e.campaigns[ctx] = stop
	return nil
}

// errLeadsAlready ends the other Campaign calls of a candidate once one of
// them won: each returns as a call made once it leads does (leadsWith).
var errLeadsAlready = errors.New("redlock: this candidate leads already")

// nudgeAtLeadExpiry sends on nudge each time the current lead's key
// expires on a quorum (see leadExpiry), and at each read of the nodes that
// finds nobody leading, until ctx ends or the returned stop is called,
// which waits for it to end.
func (e *Election) nudgeAtLeadExpiry(ctx context.Context, nudge chan<- struct{}) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		send := func() {
			select {
			case nudge <- struct{}{}:
			default:
			}
		}
		for {
			at, lead := e.leadExpiry(ctx)
			if !lead {
				// Nobody leads: the key is free, and an attempt of the
				// waiting candidate is due (one that the expiry's nudge
				// began may have failed, its nodes late).
				send()
			}
			// At least a request's time between reads of the nodes.
			t := time.NewTimer(max(time.Until(at), e.client.requestTimeout()))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if lead {
				send()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// leadExpiry returns when the current lead's key expires on a quorum of
// nodes, as far as they tell, a millisecond past, and lead true. When
// nobody leads, or too few nodes answer within two node timeouts, it
// returns when to read again, an observer's poll away (a twentieth of the
// TTL, 50 to 500 ms), and lead false: a lead is usually won right after
// the one that expired, by another candidate, whose expiry the next read
// finds. Before, it read again an hour later, and a candidate that had
// waited through one failover slept through the next leader's expiry
// until its retry delay, as did one whose attempt at the expiry failed.
func (e *Election) leadExpiry(ctx context.Context) (at time.Time, lead bool) {
	now := time.Now()
	next := now.Add(min(max(e.ttl/observePollDivisor, minObservePoll), maxObservePoll))
	// Within a round to the nodes: a node that does not answer makes
	// Inspect wait for it far longer.
	ictx, cancel := context.WithTimeout(ctx, 2*e.client.requestTimeout())
	defer cancel()
	states, err := e.client.Inspect(ictx, e.name)
	if err != nil {
		return next, false
	}
	ttls := make([]time.Duration, 0, len(states))
	for _, st := range states {
		if st.Err == nil && st.TTL > 0 {
			ttls = append(ttls, st.TTL)
		}
	}
	quorum := e.client.quorum
	if len(ttls) < quorum {
		return next, false
	}
	slices.Sort(ttls)
	return now.Add(ttls[quorum-1] + time.Millisecond), true
}

// Resign gives up the lead, so that the next candidate is elected at once,
// and returns Release's error; it does nothing and returns nil when this
// candidate never led or resigned already, nor when its lead ended (Done)
// with a lock-delay, which then stands (see WithLockDelay): the next
// candidate is elected once it is over. A lead that ended otherwise (lost,
// taken over) is released where its lock still stands, as Release does. Like Release it runs even when ctx has ended.
// The lead ends either way; when the release fails (ErrNotReleased), the
// lock stands until its TTL passes, and Resign may be called again to
// retry it, as may Campaign, unless the Client closed: nothing is sent
// then, and the lock stands until its TTL passes (resign before Close to
// hand the lead over at once).
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	lock, retry := e.lock, false
	if lock == nil {
		lock, retry = e.unreleased, true
	}
	e.lock, e.unreleased = nil, nil
	if lock != nil {
		e.resigned = lock.Fence()
	}
	e.mu.Unlock()
	if lock == nil {
		return nil
	}
	ended := lock.Err() != nil
	err := lock.Release(ctx)
	if err == nil || errors.Is(err, ErrReleased) || (retry || ended) && errors.Is(err, ErrNotHeld) {
		// The lead had ended: the lock expired, or its lock-delay stands
		// (see Lock.Release). A retry may find the lock gone: the sweep
		// of leftovers sends a failed release again once the nodes answer.
		return nil
	}
	if errors.Is(err, ErrNotReleased) {
		e.mu.Lock()
		if e.lock == nil && e.unreleased == nil {
			e.unreleased = lock
		}
		e.mu.Unlock()
	}
	return err
}

// leadsWith is Campaign's answer for a candidate that leads already with
// lead: nil when value is the lead's, else an error: a leader's value
// stands for its whole term.
func leadsWith(lead *Lock, value string) error {
	info, _ := wire.ParseToken(lead.Token())
	if info.Owner == value {
		return nil
	}
	return fmt.Errorf("%w: %s leads already with value %q, which stands for its whole term: to lead with %q, "+
		"Resign, then Campaign (etcd's Proclaim has no equivalent here)", ErrInvalidOptions, quoteKey(lead.Key()), info.Owner, value)
}

// Done returns a channel that is closed when this candidate's lead ends: it
// resigned, or lost the lead (Err says which), a loss margin before its
// validity ends, so that it can stop acting as leader before another
// candidate can be elected. Before the first election it is closed.
func (e *Election) Done() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return closedChan
	}
	return e.lock.Done()
}

// Err returns nil while this candidate leads, and otherwise why not:
// ErrNoLeader before its first election or after Resign, the lead's lock
// error once it lost it (ErrLockLost, wrapping ErrClosed when the lead
// ended because its Client was closed; ErrReleased when its Lock was
// released directly rather than by Resign). A Client closed while leading
// renews the lead no more but does not end it: Err stays nil, and Done
// open, until the loss margin before its validity ends, up to a TTL after
// Close. Resign before Close to end it at once.
func (e *Election) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return fmt.Errorf("%w: this candidate does not lead %s", ErrNoLeader, quoteKey(e.name))
	}
	return e.lock.Err()
}

// Term returns this candidate's term (its lock's fencing token) while it
// leads, and that of its last lead since, 0 before its first election.
func (e *Election) Term() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return e.resigned
	}
	return e.lock.Fence()
}

// Lock returns the lock that this candidate leads by, nil when it does not
// lead, or no longer does (Done is closed): its Until, Fence and Done are
// the lead's.
func (e *Election) Lock() *Lock {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil || e.lock.Err() != nil {
		return nil
	}
	return e.lock
}

// closedChan is the Done of an election never won.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Leader reads the current leader from the nodes: the candidate whose lock
// a quorum of them hold. That may be one whose campaign reached a quorum
// and then failed (its validity spent), until its clean-up, or one that
// lost its lead by its own clock, until its lock expires: only a
// candidate's own Err and Done decide whether it may act as leader. It
// fails with ErrNoLeader
// when there is none, ErrLeaderUnknown (in a *QuorumError) when too few
// nodes answered to tell, within the larger of Options.NodeTimeout and 3 s
// or until ctx ends; that error wraps ctx's error when ctx ended it, and
// ErrClosed wraps it when Close cut the read short. It returns as soon as
// the nodes that answered settle it (a quorum of them hold one lock, or too
// few are left to make up a quorum for any): a paused minority does not
// slow it. A read that they do not settle waits for the others at most
// four node timeouts, then once more until they answer or ctx ends. While
// the nodes that hold the lead disagree on its term (its acquisition is
// raising their fencing counters), it reads again a node timeout later, up
// to three reads in all, so that Term is the lead's Lock.Fence.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := e.client.checkCall(ctx); err != nil {
		return Leader{}, err
	}
	// As an observer's reads: a node that does not answer within a few node
	// timeouts (paused, cut off) is left out when the others settle it.
	rctx, cancel := context.WithTimeout(ctx, observeReadNodeTimeouts*e.client.requestTimeout())
	r, err := e.read(rctx)
	cancel()
	if errors.Is(err, ErrLeaderUnknown) && ctxEnded(ctx) == nil {
		r, err = e.read(ctx) // the nodes left out may tell
	}
	if err != nil {
		return Leader{}, e.client.closedDuring(err)
	}
	if r.leader.Vacant() {
		return Leader{}, fmt.Errorf("%w: %s", ErrNoLeader, quoteKey(e.name))
	}
	return r.leader, nil
}

// reading is one read of an election's state from the nodes.
type reading struct {
	leader Leader
	// expires is when the leader's key expires on the quorum that holds it
	// at the latest, by this client's clock: a leader that stopped renewing
	// is gone by then. Zero when vacant.
	expires time.Time
	// unsettled: the nodes that hold the leader's lock do not agree on its
	// term yet (see leaderOf).
	unsettled bool
}

// settleReads is how many times read reads the nodes while the leader's
// term is unsettled, a node timeout apart.
const settleReads = 3

// read reads the election's lock from every node and tells who leads: the
// token that a quorum of nodes hold. While the nodes that hold it do not
// agree on its term, the leader's acquisition is raising their counters
// to its fencing token (see SAFETY.md, "Fencing tokens"),
// which takes a request: read reads again a node timeout later, up to
// settleReads times, so as not to report a term the leader does not have.
func (e *Election) read(ctx context.Context) (reading, error) {
	for tries := 1; ; tries++ {
		r, err := e.readOnce(ctx)
		if err != nil || !r.unsettled || tries == settleReads || !wait.Sleep(ctx, e.client.requestTimeout()) {
			return r, err
		}
	}
}

// readOnce is one read of read's.
func (e *Election) readOnce(ctx context.Context) (reading, error) {
	c := e.client
	start := time.Now()
	states, _ := c.inspectUntil(ctx, e.key, c.operatorTimeout(), e.settles())
	answered, counts := 0, map[string]int{}
	for _, s := range states {
		if s.Err == nil {
			answered++
			if s.Holder != "" && !s.DelayOnly {
				counts[s.Holder]++
			}
		}
	}
	top, most := "", 0
	for token, n := range counts {
		if n > most {
			top, most = token, n
		}
	}
	if most >= c.quorum {
		return e.leaderOf(top, states, start), nil
	}
	if most+len(states)-answered >= c.quorum || answered < c.quorum {
		qe := &QuorumError{Op: "leader", Key: e.key, OK: answered, Quorum: c.quorum, Err: ErrLeaderUnknown, Cause: ctxEnded(ctx)}
		qe.Nodes = make([]NodeResult, len(states))
		for i, s := range states {
			qe.Nodes[i] = NodeResult{Node: s.Node, Outcome: OutcomeOK, Err: s.Err}
			if s.Err != nil {
				qe.Nodes[i].Outcome = OutcomeError
			}
		}
		return reading{}, qe
	}
	return reading{}, nil
}

// settles returns the settled function of a read's inspectUntil: the
// nodes still to answer cannot change who leads once a quorum of those
// that answered hold one token, or once too few are left to make up a
// quorum for any.
func (e *Election) settles() func(NodeState) bool {
	quorum, all := e.client.quorum, len(e.client.conns)
	answered, most := 0, 0
	counts := map[string]int{}
	return func(s NodeState) bool {
		answered++
		if s.Holder != "" && !s.DelayOnly {
			counts[s.Holder]++
			most = max(most, counts[s.Holder])
		}
		return most >= quorum || most+all-answered < quorum
	}
}

// leaderOf builds the leader holding token from the nodes' states. Its
// term is its lock's fencing token: the counter that a quorum of the nodes
// holding it reach, the quorum-th largest of theirs. The lock was handed
// out with a token that a quorum holds, and only a minority can be above
// it: nodes whose grants the acquisition did not wait for, and nodes that
// a renewal reclaimed whose counter was above it (see Lock.reclaim). Until a quorum
// holds that very counter, the reading is unsettled: the acquisition's
// granting nodes disagreed, and its raise has yet to reach them.
func (e *Election) leaderOf(token string, states []NodeState, start time.Time) reading {
	r := reading{leader: Leader{Token: token}}
	var ttls []time.Duration
	var fences []uint64
	for _, s := range states {
		if s.Err != nil || s.Holder != token {
			continue
		}
		ttls = append(ttls, s.TTL)
		fences = append(fences, s.Fence)
		r.leader.Value, r.leader.Since = s.Owner, s.Since
	}
	q := e.client.quorum
	slices.Sort(ttls)
	slices.Sort(fences)
	if _, ours := wire.ParseToken(token); ours {
		r.leader.Term = fences[len(fences)-q]
		r.unsettled = countOf(fences, r.leader.Term) < q
	} // else a lock of another library: it has no fencing token

	// The key is gone from a quorum once the quorum-th longest TTL passed.
	r.expires = start.Add(ttls[len(ttls)-q])
	return r
}

// countOf counts the elements of vs equal to v.
func countOf(vs []uint64, v uint64) int {
	n := 0
	for _, x := range vs {
		if x == v {
			n++
		}
	}
	return n
}

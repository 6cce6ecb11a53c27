package check

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redlock-go/redlock/torture/history"
)

// Bound is what a scenario promises about waiting, which CheckLiveness
// holds its history to: how long a waiter that could have been served may
// wait, and what share of acquisitions must be served. Its zero value
// promises nothing: waits are measured and reported, not judged.
type Bound struct {
	// Wait is the longest a waiter that could have been served may wait;
	// 0 bounds nothing. A call of Acquire or AcquireAll could be served
	// all along, in its turn: its wait runs from the call to its grant or
	// give-up. A worker that loops one attempt at a time (Loops) is
	// promised no turn, only that the lock does not stay free while it
	// tries: its wait is the longest stretch in which it tried and the
	// lock was free for it (see Loops).
	Wait time.Duration
	// Loops says that the workers make one attempt at a time (TryAcquire,
	// TryAcquireAll), again and again until one is granted. A loop's
	// acquisition is such a run of attempts, from the first after its
	// last release to its grant. The lock is free for it while no holder
	// excludes it: no holder of the lock, or no writer for a reader; fewer
	// holders of a semaphore than its limit; no holder of any name of the
	// set it asks for.
	Loops bool
	// MinServed is the least share, from 0 to 1, of acquisitions that must
	// be granted: of the calls of waiting workers, or the runs of attempts
	// of looping ones, where a run that the end of the history cuts short
	// is not served. 0 checks nothing.
	MinServed float64
	// FaultFree limits the check to what no fault touches: an acquisition
	// that overlaps a fault, from its start to Recovery after its end, is
	// left out, and a loop's lock counts as not free then.
	FaultFree bool
	// Recovery is how long after a fault ends it still counts (FaultFree).
	Recovery time.Duration
	// Ignore lists kinds of faults (history.Fault.Kind) that do not count
	// as faults for FaultFree: waiting stays bounded under them.
	Ignore []string
	// Costs lists kinds of faults (history.Fault.Kind) under which waiting
	// stays bounded, but longer, with how much longer: a call that one
	// touches, from its start to its cost past its end, is held to Wait
	// plus the cost rather than left out (FaultFree), unless it is a call
	// of the process the fault hit (its Target), which is left out. A
	// loop's run is likewise held to Wait plus the cost over the stretches
	// in which the lock was free for it.
	Costs map[string]time.Duration
	// Settle is how long the history's start counts as a fault, as the
	// nodes settle, and at least until every process made its first call:
	// processes that start one after another load the machine until the
	// last one has; 0 for none.
	Settle time.Duration
	// Derivation says how Wait and MinServed follow from the row's holds,
	// waiters and retry policy, or why the row states no bound.
	Derivation string
}

// Stated reports whether b judges anything: a bound on waits, or a least
// share served.
func (b Bound) Stated() bool { return b.Wait > 0 || b.MinServed > 0 }

// Waits is what the liveness checker measured of a history.
type Waits struct {
	// Longest is the longest wait held to the bound, and Waiter whose it
	// was.
	Longest time.Duration
	Waiter  string
	// Acquisitions counts the acquisitions held to the bound, Served those
	// granted.
	Acquisitions, Served int
	// Outside counts the acquisitions left out because a fault touched
	// them (see Bound.FaultFree).
	Outside int
	// Measured counts the acquisitions whose wait was held to the bound:
	// those no fault touched, and the loops' runs that lasted beyond the
	// faults. None means that faults covered the whole history.
	Measured int
}

// Share returns the share of acquisitions served, 1 when none was held to
// the bound.
func (w Waits) Share() float64 {
	if w.Acquisitions == 0 {
		return 1
	}
	return float64(w.Served) / float64(w.Acquisitions)
}

// CheckLiveness measures the waits of the workers' acquisitions in ops
// (see Bound for what a wait is) and returns a violation per acquisition
// that waited past b.Wait, and one more when fewer acquisitions were
// served than b.MinServed, with what it measured. grants are the grants of
// ops (see Grants), faults the history's faults; start is the run's start,
// for the times in the details.
func CheckLiveness(ops []history.Op, grants []Grant, faults []history.Fault, b Bound, start int64) ([]Violation, Waits) {
	l := liveness{bound: b, clock: relClock(start), windows: faultWindows(faults, b, start, started(ops)), held: newHoldings(grants),
		costs: costWindows(faults, b), readNames: map[string]bool{}}
	all := acquisitions(ops, b.Loops)
	for _, a := range all {
		if a.shared() {
			l.readNames[a.attempts[0].Invoked.Key] = true
		}
	}
	for _, a := range all {
		l.measure(a)
	}
	if b.MinServed > 0 && l.waits.Share() < b.MinServed {
		l.violations = append(l.violations, l.underServed())
	}
	sort.SliceStable(l.violations, func(i, j int) bool { return l.violations[i].Start < l.violations[j].Start })
	return l.violations, l.waits
}

// liveness is the state of one CheckLiveness.
type liveness struct {
	bound      Bound
	clock      relClock
	windows    []span // the faults, each to Recovery after its end, merged
	costs      []costly
	held       *holdings
	readNames  map[string]bool // the names that readers took
	waits      Waits
	violations []Violation
	unserved   []acquisition // the acquisitions held to the bound and not served
}

// span is an interval of the monotonic clock, [from, to).
type span struct{ from, to int64 }

// costly is a fault of a kind in Bound.Costs: the calls that its window
// touches may wait cost more, but for those of its target.
type costly struct {
	window span // the fault, to cost past its end
	cost   time.Duration
	target string
	kind   string
}

// request is what an attempt asks for: a lock, shared or not, a permit
// of a semaphore of limit permits, or a set of names together.
type request struct {
	name   string
	names  []string
	limit  int
	shared bool
}

// requestOf returns what the acquisition ev invokes asks for.
func requestOf(ev history.Event) request {
	return request{name: ev.Key, names: ev.Names, limit: ev.Limit, shared: ev.Shared}
}

// String names what r asks for, for a detail.
func (r request) String() string {
	if len(r.names) > 0 {
		return "{" + strings.Join(r.names, ", ") + "}"
	}
	if r.limit > 0 {
		return fmt.Sprintf("a permit of %s", r.name)
	}
	return r.name
}

// acquisition is one wait: a call, or a loop's run of attempts, each
// attempt with what it asked for.
type acquisition struct {
	worker   string
	attempts []history.Op
	// start is the call, or the first attempt; end the grant, the give-up
	// or the end of the last attempt, or the end of the history when the
	// call never returned.
	start, end int64
	served     bool
	// gaveUp says that a call returned without a grant; a loop's run
	// never gives up, the end of the history cuts it short.
	gaveUp bool
}

// shared reports whether a is a reader's.
func (a acquisition) shared() bool { return a.attempts[0].Invoked.Shared }

// acquisitions returns the workers' acquisitions in ops: each call, or,
// for loops, each run of attempts up to a grant.
func acquisitions(ops []history.Op, loops bool) []acquisition {
	var last int64
	for _, op := range ops {
		last = max(last, op.Invoked.Time, op.Completed.Time)
	}
	var out []acquisition
	runs := map[string]*acquisition{} // a loop's run under way, by worker
	for _, op := range ops {
		if !strings.HasPrefix(op.Process(), "worker-") || op.Name() != history.OpAcquire {
			continue
		}
		end := op.Completed.Time
		if !op.Done() {
			end = last
		}
		if !loops {
			out = append(out, acquisition{worker: op.Process(), attempts: []history.Op{op}, start: op.Invoked.Time, end: end,
				served: op.OK(), gaveUp: op.Done() && !op.OK()})
			continue
		}
		run := runs[op.Process()]
		if run == nil {
			run = &acquisition{worker: op.Process(), start: op.Invoked.Time}
			runs[op.Process()] = run
		}
		run.attempts, run.end, run.served = append(run.attempts, op), end, op.OK()
		if op.OK() || !op.Done() {
			out = append(out, *run)
			delete(runs, op.Process())
		}
	}
	for _, run := range runs {
		out = append(out, *run)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// faultWindows returns the windows in which faults count under b, merged:
// the first Settle from start, or up to allStarted if later, and, when b
// is FaultFree, each fault from its start to Recovery after its end.
func faultWindows(faults []history.Fault, b Bound, start, allStarted int64) []span {
	var spans []span
	if b.Settle > 0 {
		spans = append(spans, span{math.MinInt64, max(start+int64(b.Settle), allStarted)})
	}
	for _, f := range faults {
		if b.FaultFree && !slices.Contains(b.Ignore, f.Kind) && !b.costs(f.Kind) {
			spans = append(spans, span{f.Start, f.End + int64(b.Recovery) + 1})
		}
	}
	return merge(spans)
}

// costs reports whether calls are held to a longer bound under faults of
// kind, rather than left out (see Costs).
func (b Bound) costs(kind string) bool {
	_, ok := b.Costs[kind]
	return ok
}

// MostCost returns the longest cost of Costs: the most a call may wait
// past Wait.
func (b Bound) MostCost() time.Duration {
	var most time.Duration
	for _, c := range b.Costs {
		most = max(most, c)
	}
	return most
}

// costWindows returns the faults of faults whose kinds b holds calls to a
// longer bound under (see Bound.Costs).
func costWindows(faults []history.Fault, b Bound) []costly {
	var out []costly
	for _, f := range faults {
		if b.FaultFree && b.costs(f.Kind) {
			cost := b.Costs[f.Kind]
			out = append(out, costly{window: span{f.Start, f.End + int64(cost) + 1}, cost: cost, target: f.Target, kind: f.Kind})
		}
	}
	return out
}

// extra returns how much longer than Wait a may wait under the costly
// faults that touch it, and the last of them; own reports that one of
// them hit a's own process, which leaves a out.
func (l *liveness) extra(a acquisition) (cost time.Duration, by *costly, own bool) {
	for i := range l.costs {
		c := &l.costs[i]
		if !touched([]span{c.window}, a.start, a.end) {
			continue
		}
		if c.target == a.worker {
			return 0, nil, true
		}
		if c.cost >= cost {
			cost, by = c.cost, c
		}
	}
	return cost, by, false
}

// started returns when the last process of ops made its first call.
func started(ops []history.Op) int64 {
	first := map[string]int64{}
	for _, op := range ops {
		if t, ok := first[op.Process()]; !ok || op.Invoked.Time < t {
			first[op.Process()] = op.Invoked.Time
		}
	}
	var last int64
	for _, t := range first {
		last = max(last, t)
	}
	return last
}

// touched reports whether [from, to] meets one of windows.
func touched(windows []span, from, to int64) bool {
	i := sort.Search(len(windows), func(i int) bool { return windows[i].to > from })
	return i < len(windows) && windows[i].from <= to
}

// measure measures a and judges it. A call that a fault touched is left
// out; a loop's run is judged on the stretches outside faults, but left
// out of the share served.
func (l *liveness) measure(a acquisition) {
	faulted := touched(l.windows, a.start, a.end)
	cost, by, own := l.extra(a)
	if faulted || own {
		l.waits.Outside++
		if !l.bound.Loops || own {
			return
		}
	}
	if !faulted || len(gaps(clip(l.windows, a.start, a.end), a.start, a.end)) > 0 {
		l.waits.Measured++
	}
	wait, stretch := time.Duration(a.end-a.start), span{a.start, a.end}
	if l.bound.Loops {
		stretch = l.longestFree(a)
		wait = time.Duration(stretch.to - stretch.from)
	}
	if wait > l.waits.Longest {
		l.waits.Longest, l.waits.Waiter = wait, a.worker
	}
	if l.bound.Wait > 0 && wait > l.bound.Wait+cost {
		l.violations = append(l.violations, l.tooLong(a, wait, stretch, by))
	}
	if faulted {
		return
	}
	l.waits.Acquisitions++
	if a.served {
		l.waits.Served++
	} else {
		l.unserved = append(l.unserved, a)
	}
}

// longestFree returns the longest stretch in which a, a loop's run of
// attempts, tried while the lock was free for it: each attempt from its
// start to the next one's, and the last to its end, with what that
// attempt asked for. Fault windows count as not free.
func (l *liveness) longestFree(a acquisition) span {
	var free []span
	for i, op := range a.attempts {
		from, to := op.Invoked.Time, a.end
		if i+1 < len(a.attempts) {
			to = a.attempts[i+1].Invoked.Time
		}
		blocked := merge(append(l.held.blocking(requestOf(op.Invoked), from, to), clip(l.windows, from, to)...))
		free = append(free, gaps(blocked, from, to)...)
	}
	var best span
	for _, s := range merge(free) {
		if s.to-s.from > best.to-best.from {
			best = s
		}
	}
	return best
}

// tooLong returns the violation of a, which waited wait, past the bound:
// a call's whole wait, or the stretch of a loop's run in which the lock
// was free for it; by is the costly fault that lengthened the bound, or
// nil.
func (l *liveness) tooLong(a acquisition, wait time.Duration, stretch span, by *costly) Violation {
	req := requestOf(a.attempts[0].Invoked)
	var what string
	if l.bound.Loops {
		what = fmt.Sprintf("%s%s tried for %s from %s in %d attempts, and %s was free for it for %s, from %s %s",
			a.worker, l.role(a), req, l.clock.at(a.start), len(a.attempts), lockWord(req), ms(wait), l.clock.at(stretch.from), l.freeUntil(a, stretch))
	} else {
		what = fmt.Sprintf("%s%s waited %s for %s from %s %s", a.worker, l.role(a), ms(wait), req, l.clock.at(a.start), l.ending(a))
	}
	bound := ms(l.bound.Wait)
	if by != nil {
		bound = fmt.Sprintf("%s (%s, and %s for the %s of %s at %s)", ms(l.bound.Wait+by.cost), bound, ms(by.cost),
			by.kind, by.target, l.clock.at(by.window.from))
	}
	return Violation{
		Checker: Liveness, Start: stretch.from, End: stretch.to, Workers: []string{a.worker},
		Detail: fmt.Sprintf("%s: past the bound of %s", what, bound),
	}
}

// freeUntil says how stretch, the longest in which the lock was free for
// a loop's run a, ended.
func (l *liveness) freeUntil(a acquisition, stretch span) string {
	switch {
	case stretch.to < a.end:
		return "until another holder took it at " + l.clock.at(stretch.to)
	case a.served:
		return "until its own grant at " + l.clock.at(stretch.to)
	}
	return "until its last attempt ended at " + l.clock.at(stretch.to)
}

// ending says how the wait of a, a call, ended.
func (l *liveness) ending(a acquisition) string {
	switch {
	case a.served:
		return "until its grant at " + l.clock.at(a.end)
	case a.gaveUp:
		return "until it gave up at " + l.clock.at(a.end)
	}
	return "and was still waiting when the history ended at " + l.clock.at(a.end)
}

// underServed returns the violation of a share served below the bound's,
// naming the first acquisitions not served.
func (l *liveness) underServed() Violation {
	const named = 5
	var who []string
	workers := map[string]bool{}
	for _, a := range l.unserved {
		workers[a.worker] = true
		if len(who) < named {
			who = append(who, fmt.Sprintf("%s%s from %s for %s", a.worker, l.role(a), l.clock.at(a.start), ms(time.Duration(a.end-a.start))))
		}
	}
	if more := len(l.unserved) - len(who); more > 0 {
		who = append(who, fmt.Sprintf("%d more", more))
	}
	w := l.waits
	v := Violation{Checker: Liveness, Workers: sortedKeys(workers),
		Detail: fmt.Sprintf("%d of %d acquisitions served (%s), below the least share of %s; not served: %s",
			w.Served, w.Acquisitions, percent(w.Share()), percent(l.bound.MinServed), strings.Join(who, "; ")),
	}
	if len(l.unserved) > 0 {
		v.Start, v.End = l.unserved[0].start, l.unserved[0].end
	}
	return v
}

// role returns " (reader)" or " (writer)" for the acquisitions of a
// read-write lock's name, and "" for others: only readers are marked in
// the history, so a writer is told apart by the readers of its name.
func (l *liveness) role(a acquisition) string {
	switch {
	case a.shared():
		return " (reader)"
	case l.readNames[a.attempts[0].Invoked.Key]:
		return " (writer)"
	}
	return ""
}

// lockWord names what a request waits for in a detail.
func lockWord(r request) string {
	switch {
	case len(r.names) > 0:
		return "every name"
	case r.limit > 0:
		return "a permit"
	}
	return "the lock"
}

// ms formats d in milliseconds, or seconds from a second on.
func ms(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f ms", float64(d)/1e6)
}

// percent formats a share as a percentage, rounded down to one decimal
// below 100, so that a share just short of all is not shown as all.
func percent(share float64) string {
	if share >= 1 {
		return "100%"
	}
	return fmt.Sprintf("%.1f%%", math.Floor(1000*share)/10)
}

// holdings answers, from the grants of a history, when a request could
// not have been served, with the intervals computed once per name.
type holdings struct {
	byKey   map[string][]Grant // by key held
	byName  map[string][]Grant // a semaphore's, by its name
	blocked map[string][]span  // cache, by kind and name
}

func newHoldings(grants []Grant) *holdings {
	h := &holdings{byKey: map[string][]Grant{}, byName: map[string][]Grant{}, blocked: map[string][]span{}}
	for _, g := range grants {
		h.byKey[g.Key] = append(h.byKey[g.Key], g)
		if g.Limit > 0 {
			h.byName[g.Name] = append(h.byName[g.Name], g)
		}
	}
	return h
}

// blocking returns the intervals within [from, to) in which r could not
// have been served, not merged.
func (h *holdings) blocking(r request, from, to int64) []span {
	switch {
	case len(r.names) > 0:
		var out []span
		for _, n := range r.names {
			out = append(out, clip(h.cached("any", n, h.anyHolder), from, to)...)
		}
		return out
	case r.limit > 0:
		return clip(h.cached("full", r.name, func(n string) []span { return h.full(n, r.limit) }), from, to)
	case r.shared:
		return clip(h.cached("writer", r.name, h.writer), from, to)
	}
	return clip(h.cached("any", r.name, h.anyHolder), from, to)
}

// cached returns compute(name), computed once per kind and name.
func (h *holdings) cached(kind, name string, compute func(string) []span) []span {
	k := kind + "\x00" + name
	s, ok := h.blocked[k]
	if !ok {
		s = compute(name)
		h.blocked[k] = s
	}
	return s
}

// anyHolder returns when anyone held key.
func (h *holdings) anyHolder(key string) []span {
	return merge(holds(h.byKey[key], func(Grant) bool { return true }))
}

// writer returns when a writer held key.
func (h *holdings) writer(key string) []span {
	return merge(holds(h.byKey[key], func(g Grant) bool { return !g.Shared }))
}

// full returns when limit or more holders held permits of the semaphore
// name.
func (h *holdings) full(name string, limit int) []span {
	var edges []holdEdge
	for i, s := range holds(h.byName[name], func(Grant) bool { return true }) {
		edges = append(edges, holdEdge{s.from, 1, i}, holdEdge{s.to, -1, i})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].delta < edges[j].delta
	})
	var out []span
	n := 0
	for _, e := range edges {
		n += e.delta
		switch {
		case e.delta > 0 && n == limit:
			out = append(out, span{from: e.t})
		case e.delta < 0 && n == limit-1:
			out[len(out)-1].to = e.t
		}
	}
	return merge(out)
}

// holds returns the holding intervals [Granted, End) of the grants that
// keep admits.
func holds(grants []Grant, keep func(Grant) bool) []span {
	var out []span
	for _, g := range grants {
		if keep(g) && g.End() > g.Granted {
			out = append(out, span{g.Granted, g.End()})
		}
	}
	return out
}

// merge returns spans sorted, with those that meet or touch merged.
func merge(spans []span) []span {
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// clip returns the parts of sorted, disjoint spans within [from, to).
func clip(spans []span, from, to int64) []span {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].to > from })
	var out []span
	for ; i < len(spans) && spans[i].from < to; i++ {
		out = append(out, span{max(spans[i].from, from), min(spans[i].to, to)})
	}
	return out
}

// gaps returns the parts of [from, to) outside blocked, which is sorted
// and merged.
func gaps(blocked []span, from, to int64) []span {
	var out []span
	at := from
	for _, b := range blocked {
		if b.from > at {
			out = append(out, span{at, b.from})
		}
		at = max(at, b.to)
	}
	if at < to {
		out = append(out, span{at, to})
	}
	return out
}

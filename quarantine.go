package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redlock-go/redlock/internal/nodes"
	"github.com/redlock-go/redlock/internal/telemetry"
	"github.com/redlock-go/redlock/internal/wire"
)

// MarkReady declares every node ready to vote at once: it sets the restart
// marker to "0" on each node where the marker is missing or the node is
// recovering, and leaves the others alone. Each request to a node gets the
// larger of Options.NodeTimeout and 3 s (an operator's call, not a lock
// operation), and a read of the markers that a node did not answer in time
// is asked again once: MarkReady blocks until every node answered or timed
// out, up to three such timeouts with a node that never answers.
//
// MarkReady is safe only for a brand-new, empty deployment, or when no lock
// can be outstanding (every client stopped for longer than the largest TTL):
// a node that lost its data and is marked ready can grant a lock that the
// other nodes still hold for someone else. So, unless force is true, it
// first reads every node's marker, and marks no node when the deployment is
// not brand new: when a node restarted or failed over and has not sat out
// its recovery delay (NodeState.Restarted), or when some nodes are ready
// while others are recovering (a node that lost its data, beside nodes that
// kept their locks). It then returns ErrNotBrandNew, naming the nodes. It
// marks no node either when a node's marker cannot be read: that node may
// be a ready one. When no node is ready (none has a marker, or each sits out
// its delay), the deployment cannot be told from a new one, and is marked:
// so is one whose nodes all lost their data at once, unless they granted
// this Client a lock, which shows they were ready: a node that did and is
// not ready now lost its data since, and is refused as one that restarted.
// The rule sees only the client's nodes: give MarkReady every node of the
// deployment. An entry that New left out as another entry's server
// (ErrDuplicateNode) is marked through that entry.
//
// The check runs in the client before the marking, not atomically across
// the nodes. A node that restarted or failed over between the two, or lost
// the marker the check read, is refused when it would be marked; the others
// are marked, and MarkReady returns a *QuorumError saying so: call it again.
//
// With a Redis Cluster node, each hash slot has its own restart marker
// ("redlock:marker:{tag}"), and only the markers of a lock's slot vote for it: each slot is
// judged by the rule above as a deployment of its own, so a slot that no
// lock ever used, unmarked on every node, is marked beside slots that are
// ready everywhere. MarkReady marks no slot unless every slot passes.
//
// New and the adapters' Dial functions never call it.
//
// It returns nil when every node is ready. Otherwise it returns
// ErrNotBrandNew, wrapped, when it refused; a *QuorumError with Op "mark
// ready" and each node's outcome (a refused node's is an error saying why)
// when some nodes were not marked; and an error naming the nodes when a
// node's marker could not be read. The last two wrap ctx's error if ctx
// ended.
func (c *Client) MarkReady(ctx context.Context, force bool) error {
	if err := c.checkCall(ctx); err != nil {
		return err
	}
	sets := c.markerSets()
	// checked holds, per set, each node's run_id and marker as the check
	// read them, for the mark-ready script to compare.
	checked := make([][]string, len(sets))
	if !force {
		if err := c.checkBrandNew(ctx, sets, checked); err != nil {
			return err
		}
	}
	delay := strconv.FormatInt(c.opts.RecoveryDelay.Microseconds(), 10)
	return firstError(eachSet(ctx, len(sets), func(i int) error {
		args := []string{delay, "1"}
		if !force {
			args = append([]string{delay, "0", strconv.Itoa(len(checked[i]) / 2)}, checked[i]...)
		}
		return c.markReady(ctx, c.markRequest(sets[i], args))
	}))
}

// markParallel is how many of a Redis Cluster's hash slots MarkReady reads
// or marks at once: enough to keep every node busy, few enough that no
// request waits in a node's queue for long.
const markParallel = 32

// markerSets returns the keys of each restart marker that MarkReady marks
// (see wire.Layout.MarkerSets).
func (c *Client) markerSets() [][]string { return c.keys.MarkerSets() }

// eachSet runs f(i) for every i below n, markParallel at a time, until ctx
// ends, and returns their errors in order: for the i not run, an error
// wrapping errNotMarkedReady and ctx's error.
func eachSet(ctx context.Context, n int, f func(i int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(markParallel, n) {
		wg.Go(func() {
			for i := range next {
				errs[i] = f(i)
			}
		})
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			errs[i] = fmt.Errorf("%w: %w", errNotMarkedReady, err)
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}

// firstError returns the first error of errs that is not nil.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// notBrandNewRisk ends MarkReady's refusal: why it marked no node.
const notBrandNewRisk = "a node that lost its data may have forgotten a lock that the others still hold; " +
	"no node marked ready unless forced"

// checkBrandNew reads the markers of sets on every node, records in checked
// each node's run_id and marker per set, and returns an error unless every
// set shows a brand-new deployment (see notBrandNew).
func (c *Client) checkBrandNew(ctx context.Context, sets, checked [][]string) error {
	refusals := make([]string, len(sets))
	err := firstError(eachSet(ctx, len(sets), func(i int) error {
		states, err := c.readMarkers(ctx, sets[i])
		if err != nil {
			return err
		}
		refusals[i] = c.notBrandNew(states)
		for _, s := range states {
			if !s.duplicate {
				checked[i] = append(checked[i], s.process, s.marker)
			}
		}
		return nil
	}))
	if err != nil {
		return err
	}
	first := slices.IndexFunc(refusals, func(r string) bool { return r != "" })
	switch {
	case first < 0:
		return nil
	case len(sets) == 1:
		return fmt.Errorf("%w: %s: %s", ErrNotBrandNew, refusals[0], notBrandNewRisk)
	}
	n := 0
	for _, r := range refusals {
		if r != "" {
			n++
		}
	}
	return fmt.Errorf("%w: %d of %d hash slots, the first slot %d: %s: %s", ErrNotBrandNew, n, len(sets), first, refusals[first], notBrandNewRisk)
}

// markerState is one node's restart marker as MarkReady's check read it
// (lua/marker_state.lua).
type markerState struct {
	marker    string // "" when absent
	ready     bool   // the node votes
	restarted bool   // its process changed since the marker was written
	process   string // the run_id of the node's process

	// duplicate is set, and nothing else, for a node left out as another
	// entry's server (ErrDuplicateNode): that entry's state is its own.
	duplicate bool
}

// notBrandNew returns "" when states, one per node, show a brand-new
// deployment: no node restarted, and not some ready while others are
// recovering. Otherwise it says which nodes are what.
func (c *Client) notBrandNew(states []markerState) string {
	var ready, recovering, restarted []string
	for i, s := range states {
		name := c.conns[i].Name()
		switch {
		case s.duplicate:
		case s.restarted:
			restarted = append(restarted, name)
		case !s.ready && !c.keys.Cluster && c.voted[i].Load():
			// It granted this client a lock, so it was ready: it lost
			// its marker since, with its data (a restart, a flush).
			restarted = append(restarted, name+" (which granted this client's locks)")
		case s.ready:
			ready = append(ready, name)
		default:
			recovering = append(recovering, name)
		}
	}
	var why []string
	if len(ready) > 0 && len(recovering) > 0 {
		why = append(why, strings.Join(ready, ", ")+" ready but "+strings.Join(recovering, ", ")+
			" recovering (no restart marker, or within the recovery delay)")
	}
	if len(restarted) > 0 {
		why = append(why, strings.Join(restarted, ", ")+" restarted, failed over or lost its data since it last voted")
	}
	return strings.Join(why, "; ")
}

// readMarkers reads the restart marker of keys, the marker's and its
// process key's, on every node. A node that did not answer in time is asked
// once more (see markReady). The error, when a node could not be read,
// wraps errNotMarkedReady, and ctx's error if ctx ended.
func (c *Client) readMarkers(ctx context.Context, keys []string) ([]markerState, error) {
	states, results := c.readMarkersOnce(ctx, keys)
	if ctx.Err() == nil && slices.ContainsFunc(results, func(r NodeResult) bool { return r.Outcome == OutcomeTimeout }) {
		states, results = c.readMarkersOnce(ctx, keys)
	}
	c.observeNodes(ctx, nil, telemetry.OpMarkReady, results)
	var failed []string
	for i, r := range results {
		switch {
		case r.Outcome == OutcomeOK:
		case errors.Is(r.Err, ErrDuplicateNode):
			states[i] = markerState{duplicate: true}
		case r.Err != nil:
			failed = append(failed, r.Node+" "+r.Outcome.String()+": "+r.Err.Error())
		default:
			failed = append(failed, r.Node+" "+r.Outcome.String())
		}
	}
	if len(failed) == 0 {
		return states, nil
	}
	err := fmt.Errorf("%w: the restart marker %s could not be read, so whether a node is ready is unknown, and no node was marked: %s",
		errNotMarkedReady, keys[0], strings.Join(failed, "; "))
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	return nil, err
}

// readMarkersOnce asks every node once for the restart marker of keys, and
// returns what the nodes that answered hold, with every node's outcome.
func (c *Client) readMarkersOnce(ctx context.Context, keys []string) ([]markerState, []NodeResult) {
	// A node that answers too late may still write its entry after the
	// fan-out returned; only the entries of the nodes that answered are read.
	states := make([]markerState, len(c.conns))
	read := &nodes.Request{Script: wire.MarkerStateScript, Keys: keys, Args: []string{strconv.FormatInt(c.opts.RecoveryDelay.Microseconds(), 10)},
		Decode: nodes.DecodeFunc(func(node int, v any) (any, error) {
			s, err := parseMarkerState(v, keys[0])
			if err != nil {
				return nil, err
			}
			states[node] = s
			return nil, nil
		})}
	results, _ := c.fanout(ctx, c.operatorTimeout(), read, func(any) bool { return true }, func(int, int) bool { return false })
	return states, results
}

// parseMarkerState decodes the marker-state script's reply for the marker
// key: {marker, microseconds left recovering or -1, restarted, run_id}.
func parseMarkerState(v any, key string) (markerState, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 4 {
		return markerState{}, fmt.Errorf("redlock: unexpected reply to the marker-state script: %v", v)
	}
	marker, ok1 := a[0].(string)
	left, ok2 := a[1].(int64)
	restarted, ok3 := a[2].(int64)
	process, ok4 := a[3].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return markerState{}, fmt.Errorf("redlock: unexpected reply to the marker-state script: %v", v)
	}
	if left < 0 {
		return markerState{}, fmt.Errorf("redlock: %s holds %q, a value this library did not write (another program's key?): "+
			"rename or delete that key", key, marker)
	}
	return markerState{marker: marker, ready: left == 0, restarted: restarted == 1, process: process}, nil
}

// markRequest returns the mark-ready request for the restart marker of
// keys, the marker's and its process key's, with the script's args.
func (c *Client) markRequest(keys, args []string) *nodes.Request {
	return &nodes.Request{Script: wire.MarkReadyScript, Keys: keys, Args: args, Decode: nodes.DecodeFunc(func(_ int, v any) (any, error) {
		if _, ok := v.(int64); !ok {
			return nil, fmt.Errorf("redlock: unexpected reply to the mark-ready script: %v", v)
		}
		return v, nil
	})}
}

// duplicates counts the nodes of results left out as another entry's server
// (ErrDuplicateNode): MarkReady marks that server through the other entry.
func duplicates(results []NodeResult) int {
	n := 0
	for _, r := range results {
		if errors.Is(r.Err, ErrDuplicateNode) {
			n++
		}
	}
	return n
}

// markReady sends mark, a mark-ready request, to every node. A node that
// did not answer in time is asked once more: its first request may have
// landed (a cold connection, a loaded node), and marking a ready node again
// changes nothing, so the second answer tells what the first could not.
func (c *Client) markReady(ctx context.Context, mark *nodes.Request) error {
	answered := func(any) bool { return true }
	results, ok := c.fanout(ctx, c.operatorTimeout(), mark, answered, func(int, int) bool { return false })
	if ok < len(c.conns) && ctx.Err() == nil && slices.ContainsFunc(results, func(r NodeResult) bool { return r.Outcome == OutcomeTimeout }) {
		results, ok = c.fanout(ctx, c.operatorTimeout(), mark, answered, func(int, int) bool { return false })
	}
	c.observeNodes(ctx, nil, telemetry.OpMarkReady, results)
	if ok+duplicates(results) == len(c.conns) {
		return nil
	}
	return &QuorumError{Op: "mark ready", Key: mark.Keys[0], OK: ok, Quorum: len(c.conns), Nodes: results,
		Err: errNotMarkedReady, Cause: ctxEnded(ctx)}
}

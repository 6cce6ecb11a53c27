package traffic

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/torture/history"
)

// OpObserve is the operation of an observer's record of an election's
// change (Config.Observe): a single Info event.
const OpObserve = "observe"

// lead is a candidate's lead as a holding: its lock, which a resignation
// releases.
type lead struct {
	*redlock.Lock
	election *redlock.Election
}

// Release resigns.
func (l lead) Release(ctx context.Context) error { return l.election.Resign(ctx) }

// campaign campaigns in the election on Key with the worker's name as its
// value, for up to WaitFor, and returns the lead.
func (w *worker) campaign(ctx context.Context) (*held, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.waitFor())
	defer cancel()
	if w.election == nil {
		e, err := w.client.NewElection(w.cfg.Key, w.lockOptions()...)
		if err != nil {
			return nil, err
		}
		w.election = e
	}
	if err := w.election.Campaign(ctx, w.cfg.Name); err != nil {
		return nil, err
	}
	lock := w.election.Lock()
	if lock == nil {
		// The lead ended between its grant and here: nothing is held.
		return nil, fmt.Errorf("the lead ended as it was won: %w", w.election.Err())
	}
	return &held{holding: lead{Lock: lock, election: w.election}, locks: []*redlock.Lock{lock}}, nil
}

// observe records each change of the election on Key that an observer of
// client sees, until ctx ends.
func observe(ctx context.Context, client *redlock.Client, cfg Config, w *worker) error {
	e, err := client.NewElection(cfg.Key, redlock.WithTTL(cfg.ttl()))
	if err != nil {
		return err
	}
	for l := range e.Observe(ctx) {
		ev := history.Event{Type: history.Info, Op: OpObserve, Key: cfg.Key, Token: l.Token, Fence: l.Term, Detail: l.Value}
		if err := w.emit(ev); err != nil {
			return err
		}
	}
	return nil
}

// observing starts observe in the background when cfg asks for it, and
// returns the function that waits for its end once ctx ended.
func observing(ctx context.Context, client *redlock.Client, cfg Config, w *worker) func() error {
	if !cfg.Observe {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() { done <- observe(ctx, client, cfg, w) }()
	return func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			return nil
		}
	}
}

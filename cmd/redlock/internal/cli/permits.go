package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redlock-go/redlock"
)

// permitInfix joins a semaphore's name and a permit's number in the
// permit's key, as redlock.WithLimit lays them out: permit i of the
// semaphore KEY is the lock KEY:permit:i.
const permitInfix = ":permit:"

// inspectParallel bounds how many permits are read from the nodes at once.
// Concurrent reads travel to a node together, up to a batch of 128 in one
// script call, so reading that many at once costs about one round trip;
// more would only queue behind them. A node that does not answer holds
// each round for the read's timeout, so a semaphore of redlock.MaxLimit
// permits takes 8 of those rounds then.
const inspectParallel = 128

// permitKey returns the key of permit i (from 1) of the semaphore key.
func permitKey(key string, i int) string {
	return key + permitInfix + strconv.Itoa(i)
}

// permitNumber returns the number of the permit of the semaphore key
// whose key is permit, and 0 when permit is not one of its keys.
func permitNumber(key, permit string) int {
	n, ok := strings.CutPrefix(permit, key+permitInfix)
	if !ok {
		return 0
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return 0
	}
	return i
}

// permitStates is what every node holds for one permit of a semaphore.
type permitStates struct {
	key    string
	states []redlock.NodeState
}

// inspectPermits reads every permit of the semaphore key of limit permits
// from every node, without changing anything, inspectParallel permits at
// a time. The error is that of the first permit whose key is invalid.
func inspectPermits(ctx context.Context, client *redlock.Client, key string, limit int) ([]permitStates, error) {
	return inspectPermitsAt(ctx, client, key, limit, inspectParallel)
}

// inspectPermitsAt is inspectPermits, parallel permits at a time.
func inspectPermitsAt(ctx context.Context, client *redlock.Client, key string, limit, parallel int) ([]permitStates, error) {
	permits := make([]permitStates, limit)
	errs := make([]error, limit)
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range permits {
		permits[i].key = permitKey(key, i+1)
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			permits[i].states, errs[i] = client.Inspect(ctx, permits[i].key)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return permits, nil
}

// findPermit returns the key of the permit of the semaphore key of limit
// permits that token holds on some node. Not found, the error wraps
// redlock.ErrNotHeld when every node answered for every permit, since the
// token then holds none; otherwise it says that nodes did not answer.
func findPermit(ctx context.Context, client *redlock.Client, key string, limit int, token string) (string, error) {
	permits, err := inspectPermits(ctx, client, key, limit)
	if err != nil {
		return "", err
	}
	var silent error
	for _, p := range permits {
		for _, st := range p.states {
			switch {
			case st.Err != nil && silent == nil:
				silent = fmt.Errorf("%s: %w", st.Node, st.Err)
			case st.Err == nil && tokenOf(st, token):
				return p.key, nil
			}
		}
	}
	if silent != nil {
		return "", fmt.Errorf("token %s holds none of the %d permits of %q on the nodes that answered, "+
			"and some did not: %w", token, limit, key, silent)
	}
	return "", fmt.Errorf("%w: token %s holds none of the %d permits of %q on any node: "+
		"released already, expired, or a wrong token", redlock.ErrNotHeld, token, limit, key)
}

// findAnyPermit returns the key of the permit of the semaphore key that
// token holds on some node, looking through every permit a semaphore may
// have (redlock.MaxLimit), for a verb that was given KEY and TOKEN without
// --limit; "" when none is token's, or the permits cannot be read. They
// are read all at once: a node that does not answer holds the search for
// one read's timeout, not for one per inspectParallel permits.
func findAnyPermit(ctx context.Context, client *redlock.Client, key, token string) string {
	permits, err := inspectPermitsAt(ctx, client, key, redlock.MaxLimit, redlock.MaxLimit)
	if err != nil {
		return ""
	}
	for _, p := range permits {
		for _, st := range p.states {
			if st.Err == nil && tokenOf(st, token) {
				return p.key
			}
		}
	}
	return ""
}

// tokenOf reports whether st, a permit's state on a node, is token's: it
// holds the permit, or an operator forced it free from it (so that the
// verb acting on it says so).
func tokenOf(st redlock.NodeState, token string) bool {
	return st.Holder == token || slices.Contains(st.ForcedTokens, token)
}

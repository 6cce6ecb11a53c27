package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// refused reports whether err is MarkReady refusing to mark the nodes, as
// opposed to a failure to reach them: the deployment is not brand new
// (redlock.ErrNotBrandNew), or a node changed between MarkReady's check and
// its marking, which the mark-ready script refuses.
func refused(err error) bool {
	if errors.Is(err, redlock.ErrNotBrandNew) {
		return true
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Cause != nil {
		return false
	}
	for _, r := range qe.Nodes {
		if r.Outcome != redlock.OutcomeOK && (r.Outcome != redlock.OutcomeError || r.Err == nil ||
			!strings.Contains(r.Err.Error(), "restarted") && !strings.Contains(r.Err.Error(), "changed since")) {
			return false
		}
	}
	return true
}

// markReady calls the library's Client.MarkReady(force) right after node v
// restarted, over direct connections to every node, as an operator's
// deploy script does ("redlock init" over the whole deployment), with the
// workers' TTL and recovery delay. It records the outcome in the history:
// the nodes marked ready, or refused. A refusal is the library doing its
// job, not an error of the fault; failing to reach the nodes is.
func markReady(env *Env, v int, force bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	client, err := goredis.Dial(ctx, env.Cluster.DirectURLs(), &redlock.Options{TTL: env.TTL, RecoveryDelay: env.TTL})
	if err != nil {
		return fmt.Errorf("faults: mark the nodes ready after %s restarted: %w", nodeName(v), err)
	}
	defer client.Close()
	detail := fmt.Sprintf("MarkReady(force=%v): marked ready", force)
	if err := client.MarkReady(ctx, force); err != nil {
		if !refused(err) {
			return fmt.Errorf("faults: mark the nodes ready after %s restarted: %w", nodeName(v), err)
		}
		detail = fmt.Sprintf("MarkReady(force=%v): refused: %v", force, err)
	}
	env.instant("mark-ready", nodeName(v), detail)
	return nil
}

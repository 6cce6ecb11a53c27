package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/goredis"
)

// refusedRestart reports whether err is MarkReady's refusal of a node that
// restarted, as opposed to a failure to reach the node.
func refusedRestart(err error) bool {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Cause != nil || len(qe.Nodes) != 1 {
		return false
	}
	r := qe.Nodes[0]
	return r.Outcome == redlock.OutcomeError && r.Err != nil && strings.Contains(r.Err.Error(), "restarted")
}

// markReady calls the library's Client.MarkReady(force) on node v alone,
// over a direct connection, as an operator's deploy script does after a
// restart ("redlock init"), with the workers' TTL and recovery delay. It
// records the outcome in the history: the node marked ready, or refused. A
// refusal is the library doing its job, not an error of the fault; failing
// to reach the node is.
func markReady(env *Env, v int, force bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	client, err := goredis.Dial(ctx, env.Cluster.DirectURLs()[v:v+1], &redlock.Options{TTL: env.TTL, RecoveryDelay: env.TTL})
	if err != nil {
		return fmt.Errorf("faults: mark %s ready: %w", nodeName(v), err)
	}
	defer client.Close()
	detail := fmt.Sprintf("MarkReady(force=%v): marked ready", force)
	if err := client.MarkReady(ctx, force); err != nil {
		if !refusedRestart(err) {
			return fmt.Errorf("faults: mark %s ready: %w", nodeName(v), err)
		}
		detail = fmt.Sprintf("MarkReady(force=%v): refused: %v", force, err)
	}
	env.instant("mark-ready", nodeName(v), detail)
	return nil
}

package cli

import (
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/redlock-go/redlock"
)

// Environment variables `redlock run` gives the command. envKey, envToken
// and envFence are set for one key, envPermit and envLimit with --limit
// only; envKeys and the numbered ones for several keys; envShared with
// --shared.
const (
	envKey      = "REDLOCK_KEY"
	envToken    = "REDLOCK_TOKEN"
	envFence    = "REDLOCK_FENCE"
	envDeadline = "REDLOCK_DEADLINE"
	envHeld     = "REDLOCK_HELD"
	envPermit   = "REDLOCK_PERMIT"
	envLimit    = "REDLOCK_LIMIT"
	envShared   = "REDLOCK_SHARED"
	envKeys     = "REDLOCK_KEYS"
	// Numbered variables of several keys: the prefix, then i from 1, the
	// key's place on the command line and in envKeys.
	envKeyN   = "REDLOCK_KEY_"
	envTokenN = "REDLOCK_TOKEN_"
	envFenceN = "REDLOCK_FENCE_"
)

// environment returns the command's environment: redlock's own, without
// the variables of an enclosing run, and those of what it holds, held,
// under the names keys.
func (c *runConfig) environment(keys []string, held holding) []string {
	env := append(inheritedEnv(), envDeadline+"="+formatTime(held.Until()), envHeld+"=1")
	if c.lock.shared {
		env = append(env, envShared+"=1")
	}
	locks := locksOf(keys, held)
	if len(keys) > 1 {
		return append(env, keysEnv(keys, locks)...)
	}
	lock := locks[0]
	env = append(env,
		envKey+"="+lock.Key(),
		envToken+"="+lock.Token(),
		envFence+"="+strconv.FormatUint(lock.Fence(), 10),
	)
	if c.lock.limited() {
		env = append(env,
			envPermit+"="+strconv.Itoa(permitNumber(keys[0], lock.Key())),
			envLimit+"="+c.lock.limit.String())
	}
	return env
}

// keysEnv returns the variables of several keys, locks[i] holding keys[i].
func keysEnv(keys []string, locks []*redlock.Lock) []string {
	env := []string{envKeys + "=" + strings.Join(keys, " ")}
	for i, lock := range locks {
		n := strconv.Itoa(i + 1)
		env = append(env,
			envKeyN+n+"="+keys[i],
			envTokenN+n+"="+lock.Token(),
			envFenceN+n+"="+strconv.FormatUint(lock.Fence(), 10))
	}
	return env
}

// inheritedEnv returns redlock's environment without the variables that a
// run gives its command, so that a nested run's command sees none of the
// enclosing run's beside its own: a run of several keys has no REDLOCK_KEY.
func inheritedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !runVariable(name) {
			env = append(env, kv)
		}
	}
	return env
}

// runVariable reports whether name is one of the variables a run gives
// its command.
func runVariable(name string) bool {
	switch name {
	case envKey, envToken, envFence, envDeadline, envHeld, envPermit, envLimit, envShared, envKeys:
		return true
	}
	for _, prefix := range []string{envKeyN, envTokenN, envFenceN} {
		if n, ok := strings.CutPrefix(name, prefix); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// outerKeys returns the keys an enclosing 'redlock run' holds, read from
// its variables: its REDLOCK_KEY, or its numbered keys.
func outerKeys() []string {
	if key := os.Getenv(envKey); key != "" {
		return []string{key}
	}
	var keys []string
	for i := 1; ; i++ {
		key, ok := os.LookupEnv(envKeyN + strconv.Itoa(i))
		if !ok {
			return keys
		}
		keys = append(keys, key)
	}
}

// warnIfNested warns when an enclosing 'redlock run' holds what this one
// is about to wait for: one of its keys, which is not re-entrant, or a
// permit of the semaphore KEY, which leaves this run one fewer.
func (c *runConfig) warnIfNested(stderr io.Writer, keys []string) {
	if os.Getenv(envHeld) != "1" {
		return
	}
	outer := outerKeys()
	if c.lock.limited() {
		for _, o := range outer {
			if i := permitNumber(keys[0], o); i > 0 {
				sayf(stderr, slog.LevelWarn, c.name(), "warning: the enclosing 'redlock run' holds permit %d of %q; "+
					"this run needs another one, and waits while the other holders have the rest", i, keys[0])
			}
		}
		return
	}
	i := slices.IndexFunc(keys, func(k string) bool { return slices.Contains(outer, k) })
	switch {
	case i < 0:
	case c.lock.shared && os.Getenv(envShared) == "1":
		sayf(stderr, slog.LevelWarn, c.name(), "warning: the enclosing 'redlock run' holds %q shared too; "+
			"this reader gets in unless a writer waits for it, and then waits until --wait passes", keys[i])
	default:
		sayf(stderr, slog.LevelWarn, c.name(), "warning: %q is already held by the enclosing 'redlock run' or 'redlock elect'; "+
			"locks are not re-entrant, so this waits until --wait passes", keys[i])
	}
}

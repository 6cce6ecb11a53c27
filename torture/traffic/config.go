package traffic

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redlock-go/redlock"
)

// EnvWorker is the environment variable that carries a worker's
// configuration, as JSON, to the process that runs it.
const EnvWorker = "REDLOCK_TORTURE_WORKER"

// Config configures one worker process.
type Config struct {
	// Name identifies the worker in the history: "worker-<i>".
	Name string `json:"name"`
	// Nodes are the redis:// URLs of the lock nodes as this worker reaches
	// them (through its own proxies), in node order; a URL with a cluster
	// parameter names a whole Redis Cluster (see goredis.NewURL).
	Nodes []string `json:"nodes"`
	// Register is the register service's base URL.
	Register string `json:"register"`
	// Key is the lock name.
	Key string `json:"key"`
	// Limit, when positive, makes the worker take one of Limit permits of
	// Key (redlock.WithLimit: a counting semaphore) instead of the lock;
	// each permit guards a register of its own. Zero takes the lock.
	Limit int `json:"limit"`
	// Shared makes the worker take Key shared, as a reader of a read-write
	// lock (redlock.WithShared): it reads the register, thinks and writes
	// nothing, and after its release rests as long as it thinks, or, with
	// HoldMargin, as long as it held. Workers without it take Key as
	// writers, alone.
	Shared bool `json:"shared"`
	// Names, when not empty, makes the worker take the locks of all these
	// names together (Client.TryAcquireAll, or AcquireAll with Wait)
	// instead of Key's, in the order given, and update the register of
	// each: it reads every one, thinks, and writes every one.
	Names []string `json:"names"`
	// Pick, when positive, makes the worker take Pick of Names at each
	// acquisition instead of all of them, chosen at random afresh every
	// time, in random order.
	Pick int `json:"pick"`
	// SharedGoroutines makes the last SharedGoroutines goroutines of the
	// worker take Key shared, as readers, and the others take it as
	// writers, all through the worker's one lock client; 0 leaves every
	// goroutine as Shared says.
	SharedGoroutines int `json:"shared_goroutines"`

	// TTL, NodeTimeout and DriftFactor are the lock client's options; zero
	// means the library's default.
	TTL         time.Duration `json:"ttl"`
	NodeTimeout time.Duration `json:"node_timeout"`
	DriftFactor float64       `json:"drift_factor"`
	// RecoveryDelay is the restart quarantine's delay; zero means the
	// library's default.
	RecoveryDelay time.Duration `json:"recovery_delay"`
	// DisableQuarantine turns the library's restart quarantine off.
	DisableQuarantine bool `json:"disable_quarantine"`
	// WaitReplicas is the lock client's Options.WaitReplicas: a node's
	// grant counts once that many of its replicas confirmed it.
	WaitReplicas int `json:"wait_replicas"`

	// ThinkMin and ThinkMax bound the random time between reading and
	// writing the register.
	ThinkMin time.Duration `json:"think_min"`
	ThinkMax time.Duration `json:"think_max"`
	// RetryMin and RetryMax bound the random pause after a failed attempt
	// and after a release; a reader (Shared) pauses after a release as long
	// as it thinks.
	RetryMin time.Duration `json:"retry_min"`
	RetryMax time.Duration `json:"retry_max"`
	// RetryPause, if set, makes the lock client's own retry strategy
	// (redlock.Options.Retry) pause between half of it and all of it after
	// every refused attempt in Acquire, instead of the library's default.
	RetryPause time.Duration `json:"retry_pause"`
	// Rueidis makes the lock client's Conns the rueidis adapter's
	// (rueidis.NewURL) instead of go-redis's (goredis.NewURL).
	Rueidis bool `json:"rueidis"`
	// HoldMargin, when positive, makes the worker keep the lock after its
	// write until HoldMargin before the validity deadline, so that the end
	// of every validity period is exercised. Zero releases at once.
	HoldMargin time.Duration `json:"hold_margin"`

	// Seed seeds the worker's random choices.
	Seed uint64 `json:"seed"`
	// Goroutines is how many goroutines of the worker share its lock
	// client, each with its own cycle loop and its own name in the history
	// ("<Name>.<i>"); 0 means one, named Name.
	Goroutines int `json:"goroutines"`
	// Wait makes the goroutines wait in Client.Acquire (up to WaitFor)
	// instead of making one attempt with TryAcquire: goroutines of one
	// client then queue for the lock, and a release hands it to the next.
	Wait bool `json:"wait"`
	// WaitFor is how long a waiting acquisition (Wait) waits before it
	// gives up; zero means four TTLs.
	WaitFor time.Duration `json:"wait_for"`
	// Renew makes the worker acquire with redlock.WithAutoRenew, so that
	// the lock is extended in the background while the worker thinks, for
	// as long as ThinkMax allows, longer than the TTL if need be. The
	// worker stops thinking when the lock's Done closes and then skips its
	// write: a holder must not touch the resource once its lock is lost.
	// Its release records the lock's last validity deadline (see
	// check.Grant).
	Renew bool `json:"renew"`
	// Elect makes the worker's goroutines candidates of the leader election
	// on Key (redlock.Election): an acquisition is a campaign, with the
	// goroutine's name as its value, that waits up to WaitFor, with or
	// without Wait; the lead is held as Renew holds a lock, and the release
	// is a resignation. It needs Renew, and takes Key alone and exclusive.
	Elect bool `json:"elect"`
	// Observe makes the worker follow the election on Key
	// (Election.Observe) while it runs, recording each change it sees as
	// an Info event of operation OpObserve: the leader's token, term
	// (Fence) and value (Detail), or a vacancy (no token).
	Observe bool `json:"observe"`
	// LockDelay is the lock-delay of every acquisition
	// (redlock.WithLockDelay); zero for none.
	LockDelay time.Duration `json:"lock_delay"`
}

// retry returns the lock client's retry strategy: nil, the library's
// default, unless RetryPause is set.
func (c Config) retry() redlock.RetryStrategy {
	if c.RetryPause == 0 {
		return nil
	}
	return redlock.ExponentialJitter(c.RetryPause, c.RetryPause)
}

// validate reports a configuration a worker cannot run.
func (c Config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("traffic: worker without a name")
	case len(c.Nodes) == 0:
		return errors.New("traffic: worker without nodes")
	case c.Register == "":
		return errors.New("traffic: worker without a register")
	case c.Key == "":
		return errors.New("traffic: worker without a lock key")
	case c.WaitFor < 0 || c.RetryPause < 0:
		return fmt.Errorf("traffic: %s: negative wait %v or retry pause %v", c.Name, c.WaitFor, c.RetryPause)
	case c.ThinkMax < c.ThinkMin || c.RetryMax < c.RetryMin:
		return fmt.Errorf("traffic: %s: a maximum is below its minimum", c.Name)
	}
	if err := c.validateShape(); err != nil {
		return err
	}
	return c.validateElect()
}

// validateShape reports a worker whose shape of lock cannot be: a permit
// taken shared or with other names, more names picked than listed, more
// shared goroutines than goroutines, or a shared one of several names.
func (c Config) validateShape() error {
	switch {
	case c.Limit < 0:
		return fmt.Errorf("traffic: %s: negative limit %d", c.Name, c.Limit)
	case c.Limit > 0 && (c.Shared || len(c.Names) > 0):
		return fmt.Errorf("traffic: %s: a permit of a semaphore is taken alone and exclusive", c.Name)
	case c.Pick < 0 || c.Pick > len(c.Names):
		return fmt.Errorf("traffic: %s: cannot pick %d of %d names", c.Name, c.Pick, len(c.Names))
	case c.SharedGoroutines < 0 || c.SharedGoroutines > max(c.Goroutines, 1):
		return fmt.Errorf("traffic: %s: %d shared goroutines of %d", c.Name, c.SharedGoroutines, max(c.Goroutines, 1))
	case c.SharedGoroutines > 0 && (c.Limit > 0 || len(c.Names) > 0):
		return fmt.Errorf("traffic: %s: only one name is taken shared", c.Name)
	}
	return nil
}

// validateElect reports an election's candidate that cannot run: it renews
// its lead, and takes one name alone and exclusive.
func (c Config) validateElect() error {
	if c.Elect && (!c.Renew || c.Limit > 0 || c.Shared || c.SharedGoroutines > 0 || len(c.Names) > 0) {
		return fmt.Errorf("traffic: %s: a candidate renews its lead, and takes one name alone and exclusive", c.Name)
	}
	return nil
}

// encode returns c as the value of EnvWorker.
func (c Config) encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("traffic: encode config: %w", err)
	}
	return string(b), nil
}

// decodeConfig parses the value of EnvWorker.
func decodeConfig(s string) (Config, error) {
	var c Config
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return c, fmt.Errorf("traffic: decode %s: %w", EnvWorker, err)
	}
	return c, c.validate()
}

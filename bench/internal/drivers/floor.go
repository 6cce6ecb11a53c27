package drivers

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	rueidisclient "github.com/redis/rueidis"
)

// FloorName names the fenced floor in results.
const FloorName = "fenced floor"

// The fenced floor's scripts: bsm/redislock's two, with the one write a
// fencing token adds to an acquisition, a per-key counter that outlives the
// lock (SET … GET reads the old value in the same command).
var (
	floorAcquire = rueidisclient.NewLuaScript(FloorAcquireSource)
	floorRelease = rueidisclient.NewLuaScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end
return 0`)
)

// FloorAcquireSource is the fenced floor's acquire script: KEYS[1] the
// lock key, KEYS[2] its counter; ARGV token, TTL in ms, the caller's clock
// in µs, the counter's TTL in ms.
const FloorAcquireSource = `if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return false end
local old = redis.call("SET", KEYS[2], ARGV[3], "PX", ARGV[4], "GET")
if old and tonumber(old) >= tonumber(ARGV[3]) then
	redis.call("SET", KEYS[2], old + 1, "PX", ARGV[4])
end
return 1`

// floorLibrary is not a lock to use. It is the least Redis work a fenced
// Redlock cycle can do: an acquisition that sets the key and a per-key
// fencing counter in one script, a release that deletes the key only for
// its token, nothing else (no restart quarantine, no queue, no wake-up, no
// per-node timeout, no clean-up of a failed attempt). Beside bsm/redislock
// and redsync it shows what fencing alone costs the servers, which no
// fenced lock can go below.
func floorLibrary() Library {
	return Library{
		Name:  FloorName,
		Floor: true,
		Settings: "Not a lock to use: the least Redis work of a fenced Redlock cycle. One script per node per call, " +
			"`SET key token NX PX 10000` and, when granted, `SET counter clock PX 40000 GET` (the per-key fencing " +
			"counter, raised past its old value); then a script that deletes the key when it holds the token. " +
			"Sent to every node at once, one goroutine per node, returning at a majority; each node's release sent once its " +
			"acquisition replied. No quarantine, queue, " +
			"wake-up, per-node timeout or clean-up of a failed attempt. One rueidis client per node (DisableCache, " +
			"ForceSingleClient). Run only in the one-goroutine cases of a plain lock.",
		Open: func(_ context.Context, addrs []string, _ bool) (Driver, error) {
			clients, err := rueidisClients(addrs)
			if err != nil {
				return nil, err
			}
			return &floorDriver{baselineDriver: baselineDriver{nodes: clients, quorum: len(addrs)/2 + 1}}, nil
		},
	}
}

// ttlMillis and counterMillis are the lock's TTL and its counter's: this
// library's counter outlives the lock by the default recovery delay, 30 s.
var (
	ttlMillis     = strconv.FormatInt(TTL.Milliseconds(), 10)
	counterMillis = strconv.FormatInt((TTL + 30*time.Second).Milliseconds(), 10)
)

type floorDriver struct {
	baselineDriver
	tokens atomic.Uint64
}

// floorHeld is a lock of the fenced floor: its key, its token, and the
// requests that took it, which its release waits for node by node.
type floorHeld struct {
	key, token string
	calls      calls
}

// Acquire tries until a majority grants key, pausing as the baseline does
// between attempts.
func (d *floorDriver) Acquire(ctx context.Context, key string) (any, error) {
	keys := []string{key, "fence:" + key}
	var held floorHeld
	err := retryUntil(ctx, func() bool {
		held = floorHeld{key: key, token: "t" + strconv.FormatUint(d.tokens.Add(1), 10)}
		clock := strconv.FormatInt(time.Now().UnixMicro(), 10)
		var granted bool
		granted, held.calls = d.run(ctx, nil, floorAcquire, keys, []string{held.token, ttlMillis, clock, counterMillis})
		if !granted {
			d.Release(ctx, held)
		}
		return granted
	})
	if err != nil {
		return nil, err
	}
	return held, nil
}

func (d *floorDriver) Release(ctx context.Context, held any) error {
	h := held.(floorHeld)
	if ok, _ := d.run(ctx, h.calls, floorRelease, []string{h.key}, []string{h.token}); !ok {
		return fmt.Errorf("%s: release of %s answered by fewer than %d nodes", FloorName, h.key, d.quorum)
	}
	return nil
}

// run runs script on every node, as fanOut sends a command, and reports
// whether a majority replied with a non-nil value.
func (d *floorDriver) run(ctx context.Context, after calls, script *rueidisclient.Lua, keys, args []string) (bool, calls) {
	return d.fanOut(ctx, after, func(c rueidisclient.Client) bool {
		return script.Exec(ctx, c, keys, args).Error() == nil
	})
}

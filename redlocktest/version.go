package redlocktest

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Version is a redis-server release, as `redis-server --version` reports
// it ("Redis server v=7.0.15 sha=..."). The zero value is no known
// release.
type Version struct {
	Major, Minor, Patch int
}

// String returns the version as "major.minor.patch".
func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// AtLeast reports whether v is release major.minor or a later one.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// Feature is a capability of redis-server that a test may need and that
// not every release redlocktest starts has. A test that needs one checks
// it with Version.Has (see Cluster.Version).
type Feature int

const (
	// ShardedPubSub is sharded Pub/Sub (SSUBSCRIBE, SPUBLISH), in Redis
	// 7.0 and later. A Redis Cluster without it delivers PUBLISH to
	// every node.
	ShardedPubSub Feature = iota + 1
	// Functions are FUNCTION LOAD and FCALL, in Redis 7.0 and later.
	Functions
	// ScriptErrorCodes: an error that a command called by a script meets
	// keeps its code in the script's error ("READONLY You can't write
	// ... script: <sha1>, on @user_script:3."), in Redis 7.0 and later.
	// Before, the script's error wraps it: "ERR Error running script
	// (call to f_<sha1>): @user_script:3: @user_script: 3: -READONLY ...".
	ScriptErrorCodes
)

// features names each Feature and tells the first release that has it.
var features = map[Feature]struct {
	name  string
	since Version
}{
	ShardedPubSub:    {"sharded Pub/Sub (SSUBSCRIBE, SPUBLISH)", Version{7, 0, 0}},
	Functions:        {"functions (FUNCTION LOAD, FCALL)", Version{7, 0, 0}},
	ScriptErrorCodes: {"error codes of commands in script errors", Version{7, 0, 0}},
}

// String names the feature and the release that brought it.
func (f Feature) String() string {
	feature, ok := features[f]
	if !ok {
		return "Feature(" + strconv.Itoa(int(f)) + ")"
	}
	return fmt.Sprintf("%s, Redis %d.%d and later", feature.name, feature.since.Major, feature.since.Minor)
}

// Has reports whether release v has the feature f.
func (v Version) Has(f Feature) bool {
	feature, ok := features[f]
	return ok && v.AtLeast(feature.since.Major, feature.since.Minor)
}

// debugSwitch reports whether v has enable-debug-command (7.0 and
// later), which leaves DEBUG off unless it is set. Before 7.0 DEBUG is
// always on: no release lacks it.
func (v Version) debugSwitch() bool { return v.AtLeast(7, 0) }

// clusterPortSetting reports whether v has cluster-port (7.0 and later).
// Before 7.0 a Redis Cluster node's bus listens on its port + busOffset.
func (v Version) clusterPortSetting() bool { return v.AtLeast(7, 0) }

// addSlotsRange reports whether v has CLUSTER ADDSLOTSRANGE (7.0 and
// later); before 7.0, CLUSTER ADDSLOTS takes every slot by itself.
func (v Version) addSlotsRange() bool { return v.AtLeast(7, 0) }

// busOffset is what a Redis Cluster node before 7.0 adds to its port for
// its cluster bus port.
const busOffset = 10000

// versions caches ServerVersion's answers by binary.
var versions = struct {
	sync.Mutex
	of map[string]Version
}{of: map[string]Version{}}

// ServerVersion returns the release of the redis-server binary at path
// ("" means redis-server looked up on PATH), from what `redis-server
// --version` prints. It runs each binary once and caches the answer for
// later calls. New calls it, and writes each node's redis.conf for the
// release it finds (see the package documentation, Versions).
func ServerVersion(path string) (Version, error) {
	server, err := findServer(path)
	if err != nil {
		return Version{}, err
	}
	return serverVersion(server)
}

// serverVersion is ServerVersion for a resolved binary.
func serverVersion(server string) (Version, error) {
	versions.Lock()
	defer versions.Unlock()
	if v, ok := versions.of[server]; ok {
		return v, nil
	}
	out, err := exec.Command(server, "--version").Output()
	if err != nil {
		return Version{}, fmt.Errorf("redlocktest: %s --version: %w", server, err)
	}
	v, err := parseVersion(string(out))
	if err != nil {
		return Version{}, fmt.Errorf("redlocktest: %s --version: %w", server, err)
	}
	versions.of[server] = v
	return v, nil
}

// parseVersion reads the release in what `redis-server --version` prints:
// "Redis server v=6.2.16 sha=00000000:0 malloc=jemalloc-5.1.0 bits=64
// build=...". A part it lacks (v=7.2) counts as 0; what follows the
// numbers (v=7.0.0-rc1) is ignored.
func parseVersion(out string) (Version, error) {
	for _, field := range strings.Fields(out) {
		s, ok := strings.CutPrefix(field, "v=")
		if !ok {
			continue
		}
		var parts [3]int
		for i, part := range strings.SplitN(s, ".", 3) {
			digits := part[:len(part)-len(strings.TrimLeft(part, "0123456789"))]
			n, err := strconv.Atoi(digits)
			if err != nil {
				return Version{}, fmt.Errorf("no release number in %q", field)
			}
			parts[i] = n
			if len(digits) < len(part) {
				break
			}
		}
		return Version{parts[0], parts[1], parts[2]}, nil
	}
	return Version{}, fmt.Errorf("no v= field in %q", strings.TrimSpace(out))
}

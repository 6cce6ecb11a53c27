package doctor

import (
	"errors"
	"strings"
	"testing"
)

// A Sentinel is one by its INFO's redis_mode on Redis, and by server_mode
// on Valkey 8, which has no redis_mode: before, a Valkey Sentinel named as
// a node was audited as a node of unknown role that votes.
func TestApplyInfo_sentinelOfEitherServer(t *testing.T) {
	for _, info := range []map[string]string{
		{"redis_version": "7.0.15", "redis_mode": "sentinel"},
		{"redis_version": "7.2.4", "valkey_version": "8.0.1", "server_mode": "sentinel"},
	} {
		var n Node
		n.applyInfo(info)
		if n.Role != "sentinel" {
			t.Errorf("INFO %v: role %q, want sentinel", info, n.Role)
		}
	}
}

// On Valkey, INFO's redis_version is the Redis release it is compatible
// with; the node's own release is valkey_version, which the audit keeps
// beside it.
func TestApplyInfo_valkeyVersion(t *testing.T) {
	var n Node
	n.applyInfo(map[string]string{"redis_version": "7.2.4", "valkey_version": "8.0.1", "server_mode": "standalone"})
	if n.Version != "7.2.4" || n.ValkeyVersion != "8.0.1" {
		t.Errorf("Version %q, ValkeyVersion %q: want 7.2.4 and 8.0.1", n.Version, n.ValkeyVersion)
	}
	n = Node{}
	n.applyInfo(map[string]string{"redis_version": "7.0.15", "redis_mode": "standalone"})
	if n.ValkeyVersion != "" {
		t.Errorf("ValkeyVersion %q on Redis", n.ValkeyVersion)
	}
}

// A node of Redis 6.2, which has no functions, is told to upgrade, with
// its version named.
func TestFunctionsFindings_redis62(t *testing.T) {
	var fs findingList
	n := Node{Node: "n1", Version: "6.2.16", functionsErr: errors.New("ERR unknown command 'FUNCTION'")}
	functionsFindings(&fs, n, Limits{})
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "Redis 6.2.16 has no functions") || !strings.Contains(fs[0].Remedy, "Redis 7") {
		t.Errorf("findings %+v: want one naming Redis 6.2.16, with an upgrade to Redis 7 as the remedy", fs)
	}
}

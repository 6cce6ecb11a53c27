package doctor

import "testing"

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

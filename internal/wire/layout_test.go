package wire

import (
	"testing"

	"github.com/redlock-go/redlock/internal/hashslot"
)

// On a Redis Cluster, a key's release channel is a shard channel of the
// key's slot, whatever braces the key holds; over independent servers it
// keeps its plain name.
func TestLayout_releaseChannelInTheKeysSlot(t *testing.T) {
	for _, key := range []string{"job", "user:{42}:cart", "a}b", "{}x", "{", "}{", "x{y}"} {
		if got, want := (Layout{}).ReleaseChannel(key), "redlock:released:"+key; got != want {
			t.Errorf("%q over independent servers: channel %q, want %q", key, got, want)
		}
		channel := Layout{Cluster: true}.ReleaseChannel(key)
		if hashslot.Of(channel) != hashslot.Of(key) {
			t.Errorf("%q on a cluster: channel %q in slot %d, the key in slot %d", key, channel, hashslot.Of(channel), hashslot.Of(key))
		}
	}
}

package redlock

import "testing"

// On a Redis Cluster, a key's release channel is a shard channel of the
// key's slot, whatever braces the key holds; over independent servers it
// keeps its plain name.
func TestLayout_releaseChannelInTheKeysSlot(t *testing.T) {
	for _, key := range []string{"job", "user:{42}:cart", "a}b", "{}x", "{", "}{", "x{y}"} {
		if got, want := (layout{}).releaseChannel(key), "redlock:released:"+key; got != want {
			t.Errorf("%q over independent servers: channel %q, want %q", key, got, want)
		}
		channel := layout{cluster: true}.releaseChannel(key)
		if keySlot(channel) != keySlot(key) {
			t.Errorf("%q on a cluster: channel %q in slot %d, the key in slot %d", key, channel, keySlot(channel), keySlot(key))
		}
	}
}

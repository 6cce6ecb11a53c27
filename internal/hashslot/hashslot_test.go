package hashslot

import "testing"

// Values from CLUSTER KEYSLOT on redis-server 7.0.
func TestOf(t *testing.T) {
	for key, want := range map[string]int{"": 0, "foo": 12182, "bar": 5061, "{user1}.a": Of("user1"), "{}x": Of("{}x"), "a{b": Of("a{b")} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestTag_hashesToItsSlot(t *testing.T) {
	for slot := range Count {
		if tag := Tag(slot); Of(tag) != slot || Of("{"+tag+"}anything") != slot {
			t.Fatalf("Tag(%d) = %q, in slot %d", slot, tag, Of(tag))
		}
	}
}

package goredis

import (
	"fmt"
	"strconv"
	"testing"
)

func TestBoxes_keepsEachStringBoxedOnce(t *testing.T) {
	var b boxes
	first := b.boxed("digest")
	if s, ok := first.(string); !ok || s != "digest" {
		t.Fatalf("boxed = %#v, want the string", first)
	}
	if allocs := testing.AllocsPerRun(100, func() { b.boxed("digest") }); allocs != 0 {
		t.Errorf("boxing a kept string allocates %.0f times", allocs)
	}
}

func TestBoxes_keepsAtMostMaxBoxes(t *testing.T) {
	var b boxes
	for i := range maxBoxes + 10 {
		s := strconv.Itoa(i)
		if got := b.boxed(s); got != s {
			t.Fatalf("boxed(%q) = %#v", s, got)
		}
	}
	if n := len(*b.byKey.Load()); n != maxBoxes {
		t.Errorf("kept %d strings, want %d", n, maxBoxes)
	}
}

func TestArg_writesAndPrintsAsItsString(t *testing.T) {
	for _, s := range []string{"lock:orders", ""} {
		a := (*arg)(&s)
		b, err := a.MarshalBinary()
		if err != nil || string(b) != s {
			t.Errorf("MarshalBinary(%q) = %q, %v", s, b, err)
		}
		if got := fmt.Sprint(a); got != s {
			t.Errorf("printed as %q, want %q", got, s)
		}
	}
}

package wait

import "testing"

// A release takes the offer of the oldest call parked on its key, whatever
// order they were parked in, once: the offer leaves every key it was
// parked on.
func TestOffers_oldestCallFirst(t *testing.T) {
	var os Offers
	young, old := &testOffer{}, &testOffer{}
	os.Put(young, []string{"p1", "p2"}, 7)
	os.Put(old, []string{"p2"}, 3)
	if got := os.Take("p2"); got != old {
		t.Fatalf("took %v, want the older call's offer", got)
	}
	if got := os.Take("p2"); got != young {
		t.Fatalf("took %v, want the younger call's offer next", got)
	}
	if got := os.Take("p1"); got != nil {
		t.Fatalf("the taken offer is still parked on its other key: %v", got)
	}
}

// A withdrawn offer is taken by no release.
func TestOffers_withdrawnIsNotTaken(t *testing.T) {
	var os Offers
	o := &testOffer{}
	os.Put(o, []string{"p1"}, 1)
	if !os.Withdraw(o, []string{"p1"}) {
		t.Fatal("withdrawing an offer no release took failed")
	}
	if got := os.Take("p1"); got != nil {
		t.Fatalf("took a withdrawn offer: %v", got)
	}
}

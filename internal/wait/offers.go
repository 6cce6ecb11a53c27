package wait

import (
	"sync"
	"sync/atomic"
)

// Offers are the attempts that waiting goroutines offer to go out with this
// client's release of any of several keys: the goroutine whose turn it is
// to wait for one of a semaphore's permits, when the permits it found held
// are held here, offers its attempt to the release of any of them, so that
// a permit changes hands within one round trip, as a mutex does (see
// Offer). Each offer is taken by one release at most.
type Offers struct {
	parked atomic.Int32 // keys with an offer: none makes Take free
	mu     sync.Mutex
	byKey  map[string]*parkedOffer
}

// parkedOffer is an offer and the keys it is parked on.
type parkedOffer struct {
	offer Offer
	keys  []string
}

// Put offers o to the releases of keys, until one takes it (Take) or it is
// withdrawn (Withdraw). An offer parked on one of keys before is no longer
// offered to that key's release.
func (os *Offers) Put(o Offer, keys []string) {
	os.mu.Lock()
	defer os.mu.Unlock()
	if os.byKey == nil {
		os.byKey = map[string]*parkedOffer{}
	}
	p := &parkedOffer{offer: o, keys: keys}
	for _, key := range keys {
		if _, ok := os.byKey[key]; !ok {
			os.parked.Add(1)
		}
		os.byKey[key] = p
	}
}

// Take returns the offer parked on key, claimed for the caller's release of
// key (Offer.Take), and unparks it from every key; nil when none is, or it
// was withdrawn meanwhile.
func (os *Offers) Take(key string) Offer {
	if os.parked.Load() == 0 {
		return nil
	}
	os.mu.Lock()
	p := os.byKey[key]
	if p != nil {
		os.unparkLocked(p)
	}
	os.mu.Unlock()
	if p == nil || !p.offer.Take() {
		return nil
	}
	return p.offer
}

// Withdraw takes o back from keys, and reports whether no release had
// taken it (Offer.Withdraw).
func (os *Offers) Withdraw(o Offer, keys []string) bool {
	os.mu.Lock()
	for _, key := range keys {
		if p := os.byKey[key]; p != nil && p.offer == o {
			os.unparkLocked(p)
			break
		}
	}
	os.mu.Unlock()
	return o.Withdraw()
}

// unparkLocked removes p from the keys it is still parked on.
func (os *Offers) unparkLocked(p *parkedOffer) {
	for _, key := range p.keys {
		if os.byKey[key] == p {
			delete(os.byKey, key)
			os.parked.Add(-1)
		}
	}
}

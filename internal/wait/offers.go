package wait

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Offers are the attempts that waiting goroutines offer to go out with this
// client's release of any of several keys: a goroutine waiting for one of
// a semaphore's permits, when the permits it found held are held here,
// offers its attempt to the release of any of them, so that a permit
// changes hands within one round trip, as a mutex does (see Offer). Each
// offer is taken by one release at most, and each release takes the offer
// of the oldest call parked on its key: several goroutines of one client
// may wait for the permits it holds (see Lanes).
type Offers struct {
	parked atomic.Int32 // keys with an offer: none makes Take free
	mu     sync.Mutex
	byKey  map[string][]*parkedOffer // oldest first
}

// parkedOffer is an offer, the keys it is parked on and its call's rank.
type parkedOffer struct {
	offer Offer
	keys  []string
	rank  uint64
}

// Put offers o to the releases of keys, until one takes it (Take) or it is
// withdrawn (Withdraw), behind the offers of lower rank parked on them (the
// calls that came before, Lanes.Take's ticket).
func (os *Offers) Put(o Offer, keys []string, rank uint64) {
	os.mu.Lock()
	defer os.mu.Unlock()
	if os.byKey == nil {
		os.byKey = map[string][]*parkedOffer{}
	}
	p := &parkedOffer{offer: o, keys: keys, rank: rank}
	for _, key := range keys {
		q := os.byKey[key]
		if len(q) == 0 {
			os.parked.Add(1)
		}
		i := len(q)
		for i > 0 && q[i-1].rank > rank {
			i--
		}
		os.byKey[key] = slices.Insert(q, i, p)
	}
}

// Take returns the offer of lowest rank parked on key, claimed for the caller's
// release of key (Offer.Take), and unparks it from every key; nil when none
// is, or those parked were withdrawn meanwhile.
func (os *Offers) Take(key string) Offer {
	if os.parked.Load() == 0 {
		return nil
	}
	for {
		os.mu.Lock()
		var p *parkedOffer
		if q := os.byKey[key]; len(q) > 0 {
			p = q[0]
			os.unparkLocked(p)
		}
		os.mu.Unlock()
		if p == nil {
			return nil
		}
		if p.offer.Take() {
			return p.offer
		}
	}
}

// Withdraw takes o back from keys, and reports whether no release had
// taken it (Offer.Withdraw).
func (os *Offers) Withdraw(o Offer, keys []string) bool {
	os.mu.Lock()
	for _, key := range keys {
		if i := slices.IndexFunc(os.byKey[key], func(p *parkedOffer) bool { return p.offer == o }); i >= 0 {
			os.unparkLocked(os.byKey[key][i])
			break
		}
	}
	os.mu.Unlock()
	return o.Withdraw()
}

// unparkLocked removes p from the keys it is still parked on.
func (os *Offers) unparkLocked(p *parkedOffer) {
	for _, key := range p.keys {
		q := os.byKey[key]
		i := slices.Index(q, p)
		if i < 0 {
			continue
		}
		q = slices.Delete(q, i, i+1)
		if len(q) == 0 {
			delete(os.byKey, key)
			os.parked.Add(-1)
			continue
		}
		os.byKey[key] = q
	}
}

package redlock

// permitHandoff is the attempt of the goroutine whose turn it is to wait
// for a semaphore's permit, offered to go out with this client's release of
// any of the permits its last try found held here (see handoff and
// wait.Offers): the release that takes it carries an attempt on the permit
// it releases, so that the permit changes hands within one round trip
// instead of a release, a wake-up and an attempt. The attempt goes through
// the permit's queue as a carried mutex attempt does: it defers to another
// client first in line there (see lua/queued_acquire.lua, mode 3).
type permitHandoff struct {
	*handoff
	p       *permits
	keys    []string // the permits offered to, held or claimed here
	numbers []int    // their indexes among the permits, keys[i]'s at i
	n       int      // the index of the permit carried, set by bind
}

// bind makes the offer an attempt on the permit key, for the release of
// key that took it, and returns it as the release carries it.
func (h *permitHandoff) bind(key string) *handoff {
	for i, k := range h.keys {
		if k == key {
			h.n = h.numbers[i]
		}
	}
	h.p.claim(key) // no other call here asks for a permit held here
	h.key, h.place = key, h.p.place(h.n)
	return h.handoff
}

// offer offers the call's next attempt to go out with this client's release
// of any of the permits its last try skipped as held here, or as claimed by
// another call here, which may win them, and returns the channel closed
// once a release sent it; nil when the try skipped none.
func (p *permits) offer() <-chan struct{} {
	if !p.waits || len(p.heldHere)+len(p.claimedElsewhere) == 0 {
		return nil
	}
	h := &permitHandoff{p: p,
		handoff: p.c.newHandoff(p.ctx, "", p.cfg.ttl, p.cfg.delay, p.cfg.owner, p.cfg.autoRenew, nil)}
	for i, l := range p.heldHere {
		h.keys = append(h.keys, l.key)
		h.numbers = append(h.numbers, p.heldNumbers[i])
	}
	h.keys = append(h.keys, p.claimedElsewhere...)
	h.numbers = append(h.numbers, p.claimedNumbers...)
	p.offered = h
	p.c.permitOffers.Put(h, h.keys, p.rank)
	return h.sent
}

// withdraw takes the offer back, and reports whether no release had taken
// it; when one had, the next try collects its attempt (collect).
func (p *permits) withdraw() bool {
	h := p.offered
	if h == nil || p.c.permitOffers.Withdraw(h, h.keys) {
		p.offered = nil
		return true
	}
	return false
}

// collect completes the attempt that a release took with it.
func (p *permits) collect() (*Lock, error) {
	h := p.offered
	p.offered = nil
	<-h.sent
	lock, err := h.collect()
	noteAttempt(p.call, lock, err)
	if err == nil {
		p.c.permits.add(lock)
		p.granted(h.n)
	} else {
		// The permit the release freed may be free: the other calls
		// waiting for it here try again.
		p.c.permits.forget(h.key)
		p.c.handoffsFailed.changed()
	}
	return lock, err
}

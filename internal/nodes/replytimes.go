package nodes

import (
	"math"
	"sync/atomic"
	"time"
)

// replyHalfLife is how fast a long reply time is forgotten: the time
// remembered halves every replyHalfLife once no reply took as long.
const replyHalfLife = time.Second

// replyTimes remembers the longest time the nodes took lately to answer,
// as this process saw it (see Set.RecentReplyTime): the round trips, the
// nodes' queues, and the wait of the reading goroutines for a core. A host
// whose cores are all busy reads replies long after they arrived, and a
// request timed out on the clock would then fail however quickly the node
// answered.
type replyTimes struct {
	over time.Duration // replies that take longer are remembered; 0: none is
	peak atomic.Pointer[replyPeak]
}

// replyPeak is one long reply time and when it was seen.
type replyPeak struct {
	took time.Duration
	at   time.Time
}

// observe remembers took when it is longer than what is remembered now.
func (r *replyTimes) observe(took time.Duration) {
	if r.over <= 0 || took <= r.over {
		return
	}
	now := time.Now()
	for {
		p := r.peak.Load()
		if p != nil && p.decayed(now) >= took {
			return
		}
		if r.peak.CompareAndSwap(p, &replyPeak{took: took, at: now}) {
			return
		}
	}
}

// recent returns the longest reply time seen lately, halved for every
// replyHalfLife since it was seen; 0 when none was longer than over.
func (r *replyTimes) recent() time.Duration {
	p := r.peak.Load()
	if p == nil {
		return 0
	}
	if d := p.decayed(time.Now()); d > r.over {
		return d
	}
	return 0
}

// decayed returns the peak as it stands at now.
func (p *replyPeak) decayed(now time.Time) time.Duration {
	since := now.Sub(p.at)
	if since <= 0 {
		return p.took
	}
	return time.Duration(float64(p.took) * math.Exp2(-float64(since)/float64(replyHalfLife)))
}

package report

import (
	"fmt"
	"strings"
)

// Status is a target's verdict.
type Status string

// Verdicts.
const (
	Pass Status = "PASS"
	Miss Status = "MISS"
	NA   Status = "n/a"  // a result the target needs is missing
	Info Status = "info" // a measurement shown next to the targets, no goal
)

// Target is one goal checked against a run: a ratio between our library and
// a peer, or between our library and a reference value.
type Target struct {
	Goal    string `json:"goal"`
	Case    string `json:"case"`
	Library string `json:"library"`
	Value   string `json:"value"` // what was measured, e.g. "3.1x (8,200 vs 2,650 cycles/s)"
	Need    string `json:"need"`
	Status  Status `json:"status"`
}

// Metric picks one number from a row.
type Metric struct {
	Name string
	Unit string
	Get  func(Row) float64
}

// Metrics used by targets.
var (
	RateMetric   = Metric{"rate", "/s", func(r Row) float64 { return r.Rate }}
	P50Metric    = Metric{"p50", "µs", func(r Row) float64 { return r.P50Us }}
	P99Metric    = Metric{"p99", "µs", func(r Row) float64 { return r.P99Us }}
	AllocsMetric = Metric{"allocs/cycle", "", func(r Row) float64 { return r.AllocsPerCycle }}
)

// Unmeasured starts the value of a target whose reference measured 0: a
// run too short for the 10 ms resolution of the servers' CPU time.
const Unmeasured = "not measured: "

// unmeasured is the value of a target whose reference, peer, measured 0
// on metric m.
func unmeasured(peer string, m Metric) string {
	return Unmeasured + peer + "'s " + m.Name + " is 0 in this run"
}

// AtLeast checks ours >= factor × peer on metric m in one case.
func (r *Report) AtLeast(goal, caseID, ours, peer string, m Metric, factor float64) Target {
	t := Target{Goal: goal, Case: caseID, Library: ours, Need: fmt.Sprintf(">= %.2gx %s", factor, peer)}
	a, okA := r.Row(caseID, ours)
	b, okB := r.Row(caseID, peer)
	if !okA || !okB {
		t.Status, t.Value = NA, "missing result"
		return t
	}
	if m.Get(b) == 0 {
		t.Status, t.Value = NA, unmeasured(peer, m)
		return t
	}
	ratio := m.Get(a) / m.Get(b)
	t.Value = fmt.Sprintf("%.2fx (%s vs %s %s)", ratio, Num(m.Get(a)), Num(m.Get(b)), m.Unit)
	t.Status = verdict(ratio >= factor)
	return t
}

// AtMost checks ours <= fraction × peer on metric m in one case.
func (r *Report) AtMost(goal, caseID, ours, peer string, m Metric, fraction float64) Target {
	t := Target{Goal: goal, Case: caseID, Library: ours, Need: fmt.Sprintf("<= %.2gx %s", fraction, peer)}
	a, okA := r.Row(caseID, ours)
	b, okB := r.Row(caseID, peer)
	if !okA || !okB {
		t.Status, t.Value = NA, "missing result"
		return t
	}
	if m.Get(b) == 0 {
		t.Status, t.Value = NA, unmeasured(peer, m)
		return t
	}
	if a.Cycles == 0 {
		t.Status, t.Value = Miss, "no cycle completed"
		return t
	}
	ratio := m.Get(a) / m.Get(b)
	t.Value = fmt.Sprintf("%.2fx (%s vs %s %s)", ratio, Num(m.Get(a)), Num(m.Get(b)), m.Unit)
	t.Status = verdict(ratio <= fraction)
	return t
}

// WithinRoundTrips checks ours's metric m <= n node round trips, as measured
// during the case (at the start of the run if not).
func (r *Report) WithinRoundTrips(goal, caseID, ours string, m Metric, n float64) Target {
	t := Target{Goal: goal, Case: caseID, Library: ours, Need: fmt.Sprintf("<= %g round trips", n)}
	a, ok := r.Row(caseID, ours)
	rtt := r.Meta.RoundTripUs
	if c, found := r.Case(caseID); found && c.RoundTripUs > 0 {
		rtt = c.RoundTripUs
	}
	if !ok || rtt == 0 {
		t.Status, t.Value = NA, "missing result"
		return t
	}
	if a.Cycles == 0 {
		t.Status, t.Value = Miss, "no cycle completed"
		return t
	}
	rts := m.Get(a) / rtt
	t.Value = fmt.Sprintf("%.1f round trips (%s µs, round trip %s µs)", rts, Num(m.Get(a)), Num(rtt))
	t.Status = verdict(rts <= n)
	return t
}

// FewestAllocs checks that ours allocates less per cycle than every peer in
// every case of one client per library where both ran and took a plain
// lock (in the others the peers run substitutes: see Case.Mutex), and
// names the closest call. The cases of separate clients on one key are left out:
// there the allocations per grant are those of every client's waiting,
// which a library that queues clients in order (every grant wakes another
// client) and one whose releasing client takes the key again (few wake-ups)
// spend very differently; they are shown on their own.
func (r *Report) FewestAllocs(goal, ours string, peers []string) Target {
	t := Target{Goal: goal, Case: "all of one client", Library: ours, Need: "< every peer, every case of a plain lock"}
	worst, worstAt := 0.0, ""
	compared := 0
	for _, c := range r.Cases {
		a, ok := r.Row(c.ID, ours)
		if !ok || a.Cycles == 0 || c.Clients > 0 || !c.Mutex() {
			continue
		}
		for _, p := range peers {
			b, ok := r.Row(c.ID, p)
			if !ok || b.Cycles == 0 {
				continue
			}
			compared++
			if ratio := a.AllocsPerCycle / b.AllocsPerCycle; ratio > worst {
				worst = ratio
				worstAt = fmt.Sprintf("%s vs %s in %s: %s vs %s", ours, p, c.ID, Num(a.AllocsPerCycle), Num(b.AllocsPerCycle))
			}
		}
	}
	if compared == 0 {
		t.Status, t.Value = NA, "missing result"
		return t
	}
	t.Value = fmt.Sprintf("worst ratio %.2fx (%s)", worst, worstAt)
	t.Status = verdict(worst < 1)
	return t
}

// Ratio reports metric m of one library in case a against case b, with no
// goal: how much a condition (a slow node) costs.
func (r *Report) Ratio(goal, caseA, caseB, library string, m Metric) Target {
	t := Target{Goal: goal, Case: caseA + " / " + caseB, Library: library, Need: "—", Status: Info}
	a, okA := r.Row(caseA, library)
	b, okB := r.Row(caseB, library)
	if !okA || !okB || m.Get(b) == 0 {
		t.Status, t.Value = NA, "missing result"
		if okB && b.Cycles == 0 {
			t.Value = "no cycle completed in " + caseB
		}
		return t
	}
	t.Value = fmt.Sprintf("%.2fx (%s vs %s %s)", m.Get(a)/m.Get(b), Num(m.Get(a)), Num(m.Get(b)), m.Unit)
	return t
}

// Versus reports metric m of library a against library b in one case, with
// no goal.
func (r *Report) Versus(goal, caseID, a, b string, m Metric) Target {
	t := r.AtLeast(goal, caseID, a, b, m, 0)
	t.Need = "—"
	if t.Status != NA {
		t.Status = Info
	}
	return t
}

func verdict(ok bool) Status {
	if ok {
		return Pass
	}
	return Miss
}

// Num formats v with thousands separators and few decimals.
func Num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// AheadOfPeers checks that ours has a higher rate than every peer in every
// case where both ran and took a plain lock (in the others the peers run
// substitutes: see Case.Mutex), and names the closest call.
func (r *Report) AheadOfPeers(goal, ours string, peers []string) Target {
	t := Target{Goal: goal, Case: "all", Library: ours, Need: "> every peer, every case of a plain lock"}
	worst, worstAt := 0.0, ""
	for _, c := range r.Cases {
		a, ok := r.Row(c.ID, ours)
		if !ok || !c.Mutex() {
			continue
		}
		for _, p := range peers {
			b, ok := r.Row(c.ID, p)
			if !ok || b.Rate == 0 {
				continue
			}
			if ratio := a.Rate / b.Rate; worstAt == "" || ratio < worst {
				worst = ratio
				worstAt = fmt.Sprintf("%s vs %s in %s: %s vs %s /s", ours, p, c.ID, Num(a.Rate), Num(b.Rate))
			}
		}
	}
	if worstAt == "" {
		t.Status, t.Value = NA, "missing result"
		return t
	}
	t.Value = fmt.Sprintf("worst ratio %.2fx (%s)", worst, worstAt)
	t.Status = verdict(worst > 1)
	return t
}

// NoErrors checks that ours reported no failed operation in any case.
func (r *Report) NoErrors(goal, ours string) Target {
	t := Target{Goal: goal, Case: "all", Library: ours, Need: "0 in every case"}
	var total int64
	var where []string
	for _, c := range r.Cases {
		if a, ok := r.Row(c.ID, ours); ok && a.Errors > 0 {
			total += a.Errors
			where = append(where, fmt.Sprintf("%s: %d", c.ID, a.Errors))
		}
	}
	t.Value = fmt.Sprintf("%d errors", total)
	if len(where) > 0 {
		t.Value += " (" + strings.Join(where, ", ") + ")"
	}
	t.Status = verdict(total == 0)
	return t
}

// Metrics of the cost per lock.
var (
	ClientCPUMetric = Metric{"client CPU/cycle", "µs", func(r Row) float64 { return r.CPUUsPerCycle }}
	ServerCPUMetric = Metric{"Redis CPU/cycle", "µs", func(r Row) float64 { return r.ServerCPUUsPerCycle }}
	MaxMetric       = Metric{"max", "µs", func(r Row) float64 { return r.MaxUs }}
)

// Best returns, of libraries, the one with the highest rate in case
// (completed cycles), "" when none ran.
func (r *Report) Best(caseID string, libraries []string) string {
	best, rate := "", 0.0
	for _, l := range libraries {
		if row, ok := r.Row(caseID, l); ok && row.Rate > rate {
			best, rate = l, row.Rate
		}
	}
	return best
}

// Shortest returns, of libraries, the one with the lowest value of m in
// case among those that completed cycles, "" when none did.
func (r *Report) Shortest(caseID string, libraries []string, m Metric) string {
	best, value := "", 0.0
	for _, l := range libraries {
		if row, ok := r.Row(caseID, l); ok && row.Cycles > 0 && (best == "" || m.Get(row) < value) {
			best, value = l, m.Get(row)
		}
	}
	return best
}

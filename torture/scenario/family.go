package scenario

import "github.com/redlock-go/redlock/torture/traffic"

// rows are the rows of one workload: those that must hold and those that
// must be caught, their names starting with prefix ("" for the lock's).
type rows struct {
	prefix        string
	holds, caught []Scenario
}

// fenced returns the "/fenced" variants of r's first row, the one without
// faults, and of each row that must be caught: the same load and faults on
// a fenced register, where they must hold.
func (r rows) fenced() []Scenario {
	var out []Scenario
	for _, s := range append([]Scenario{r.holds[0]}, r.caught...) {
		s.Name += "/fenced"
		s.About = "fenced register: " + s.About
		s.Register = traffic.Fenced
		s.Expect = Hold
		out = append(out, s)
	}
	return out
}

// writeFenced returns the "eviction/write-fenced" row of r: fencing only
// writes is not enough for a read-modify-write while two holders overlap,
// so it must be caught.
func (r rows) writeFenced() Scenario {
	s := byName(r.caught, r.prefix+"eviction")
	s.Name += "/write-fenced"
	s.About = "register fencing writes only (fence.Store.Write without ReadFenced): " + s.About +
		"; an older holder's write lands between a newer holder's read and write"
	s.Register = traffic.WriteFenced
	return s
}

// family is a set of rows derived from rows of the table: the same faults
// with another workload or another client behaviour, named with a prefix
// ("renew/minority-kill"). A new kind of workload is a new family.
type family struct {
	// prefix starts the names of the family's rows.
	prefix string
	// about starts the description of the family's variant s of a row
	// (after apply), before the row's own.
	about func(s Scenario) string
	// apply turns a row into the family's.
	apply func(*Scenario)
}

// variant returns the family's variant of s, described as the family's
// workload followed by about.
func (f family) variant(s Scenario, about string) Scenario {
	s.Name = f.prefix + s.Name
	f.apply(&s)
	s.About = f.about(s) + "; " + about
	return s
}

// of returns the family's variants of the rows of table named names.
func (f family) of(table []Scenario, names ...string) []Scenario {
	out := make([]Scenario, len(names))
	for i, name := range names {
		s := byName(table, name)
		out[i] = f.variant(s, s.About)
	}
	return out
}

// workloadAbout describes, for the families of another workload, the rows
// of the lock whose own description names the lock's workers or its
// Acquire: a family has workers of its own, and calls of its own.
var workloadAbout = map[string]string{
	"no-faults/handoff": "four goroutines of each worker, sharing its client, wait for their turn on five healthy nodes",
	"minority-kill/handoff": "four goroutines of each worker, sharing its client, wait for their turn while one or two nodes " +
		"are killed and restart empty",
	"flapping-node": "four goroutines of each worker wait for their turn while one node is blackholed for about 100 ms " +
		"at a time, over and over, with short gaps",
	"no-faults/crowd-64": "each worker process is its own client and waits for its turn on five healthy nodes",
}

// mirror returns the family's variants of every row of the lock: the
// family's workload under every fault the lock is tested under, expected
// to hold where the lock's row holds and to be caught where it is caught.
// The first row, without faults, says that the workload runs on five
// healthy nodes.
func (f family) mirror(lock rows) rows {
	variants := func(table []Scenario) []Scenario {
		out := make([]Scenario, len(table))
		for i, s := range table {
			about, ok := workloadAbout[s.Name]
			if !ok {
				about = s.About
			}
			out[i] = f.variant(s, about)
		}
		return out
	}
	r := rows{prefix: f.prefix, holds: variants(lock.holds), caught: variants(lock.caught)}
	r.holds[0].About = f.about(r.holds[0]) + " on five healthy nodes"
	return r
}

// renewals are the "renew/" rows: their faults hit holders that renew the
// lock in the background while they think for longer than the TTL, and
// that must not write once the lock is lost.
var renewals = family{
	prefix: "renew/",
	about: func(Scenario) string {
		return "holders renew the lock while they think for longer than the TTL and stop writing once it is lost"
	},
	apply: func(s *Scenario) {
		s.Renew = true
		s.ThinkMin, s.ThinkMax, s.Duration = renewThinkMin, renewThinkMax, renewDuration
	},
}

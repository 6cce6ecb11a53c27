package scenario

import (
	"fmt"
	"time"
)

// multikeyWorkers is the least number of workers in the "multikey/" rows,
// and multikeySets the sets of names they take, worker i the set i mod 6:
// two or three of four names, each name in three or four sets and in
// different orders, so that sets cross (every set meets most others) while
// disjoint ones, {a, b} and {c, d}, are held at once. Both groups of a
// split quorum (even and odd workers) have sets that meet the other
// group's. A row of the lock with more workers (a crowd) keeps its own
// number.
const multikeyWorkers = 6

var multikeySets = [][]string{{"b", "a"}, {"c", "d"}, {"c", "b"}, {"a", "d"}, {"d", "b", "a"}, {"a", "c"}}

// multikeyMeetingSets are the sets of the "multikey/" rows whose holders
// keep their locks long (see holdsLong), where every
// two sets meet. With multikeySets, the holders of {a, b} and {c, d}, who
// take them again within milliseconds of each release, would hold every
// name nearly all the time, and no other set, which meets both, would ever
// be free at once: the workers that a lost key must reach to show a second
// holder would never get it. When every two sets meet, one worker holds at
// a time, and the others contend for its names as for the lock.
var multikeyMeetingSets = [][]string{{"b", "a"}, {"c", "b"}, {"a", "c"}, {"d", "b", "a"}, {"a", "d", "c"}, {"c", "d", "b"}}

// multikeys are the "multikey/" rows: the workers take the locks of sets
// of names together, all or nothing (TryAcquireAll, or AcquireAll for the
// rows that wait), and update the register of each name. Each name's lock
// is a lock of its own: the lock checkers apply to each name's holdings,
// the lost-update checker to each register.
var multikeys = family{
	prefix: "multikey/",
	about: func(s Scenario) string {
		sets := "in crossing orders"
		if holdsLong(s) {
			sets = "every two sets sharing a name"
		}
		return fmt.Sprintf("%d workers take two or three of four names together, all or nothing, %s, "+
			"and update each name's register", s.Workers, sets)
	},
	apply: func(s *Scenario) {
		s.Workers, s.NameSets = max(s.Workers, multikeyWorkers), multikeySets
		if holdsLong(*s) {
			s.NameSets = multikeyMeetingSets
		}
	},
}

// longThink is the least think time (Scenario.ThinkMin) at which holders
// keep their names as long as those that hold to the end of their
// validity do, for the choice of the "multikey/" rows' sets.
const longThink = time.Second

// holdsLong reports whether the holders of s keep their names long: to
// the end of their validity (HoldMargin), or through a think of a second
// or more.
func holdsLong(s Scenario) bool {
	return s.HoldMargin > 0 || s.ThinkMin >= longThink
}

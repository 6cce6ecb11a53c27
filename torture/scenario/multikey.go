package scenario

import "fmt"

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

// multikeys are the "multikey/" rows: the workers take the locks of sets
// of names together, all or nothing (TryAcquireAll, or AcquireAll for the
// rows that wait), and update the register of each name. Each name's lock
// is a lock of its own: the lock checkers apply to each name's holdings,
// the lost-update checker to each register.
var multikeys = family{
	prefix: "multikey/",
	about: func(s Scenario) string {
		return fmt.Sprintf("%d workers take two or three of four names together, all or nothing, in crossing orders, "+
			"and update each name's register", s.Workers)
	},
	apply: func(s *Scenario) {
		s.Workers, s.NameSets = max(s.Workers, multikeyWorkers), multikeySets
	},
}

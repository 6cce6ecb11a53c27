package scenario

import "fmt"

// rwlockWorkers is the least number of workers in the "rwlock/" rows, of
// which the last half are readers, so that readers often hold the name
// together while writers contend with them and with each other. The
// writers, workers 0 to 2, are in both groups of a split quorum (even and
// odd workers), and worker 0, which the pause at the read stops, is one.
// A row of the lock with more workers (a crowd) keeps its own number.
const rwlockWorkers = 6

// rwlocks are the "rwlock/" rows: the workers take the lock's name as a
// read-write lock, writers alone, with a read-modify-write of its register,
// and readers shared, with a read of it. The overlap checker lets readers
// hold together and catches a writer with anyone; the lost-update checker
// sees the writers' writes; fencing order spans both kinds. Readers rest
// after each release as long as they read, or as long as they held in the
// rows whose holders keep the name to the end of its validity (see
// traffic.Config.Shared), so that writers get the name between them in
// every row.
var rwlocks = family{
	prefix: "rwlock/",
	about: func(s Scenario) string {
		return fmt.Sprintf("%d workers take one name, %d alone as writers that update its register and %d shared as "+
			"readers that only read it (a read-write lock)", s.Workers, s.Workers-s.Readers, s.Readers)
	},
	apply: func(s *Scenario) {
		s.Workers = max(s.Workers, rwlockWorkers)
		s.Readers = s.Workers / 2
	},
}

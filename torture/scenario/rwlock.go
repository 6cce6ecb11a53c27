package scenario

import (
	"fmt"

	"github.com/redlock-go/redlock/torture/faults"
)

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
		if next := s.Faults; next != nil {
			s.Faults = func() []faults.Fault { return afterWriters(next()) }
		}
	},
}

// afterWriters makes each failover that follows a grant follow a writer's:
// a reader's lock lost on the promoted replica lets in only readers, and a
// row expected to be caught would show nothing (see
// faults.FailoverOnGrant.Writers).
func afterWriters(fs []faults.Fault) []faults.Fault {
	for i, f := range fs {
		if fo, ok := f.(faults.FailoverOnGrant); ok {
			fo.Writers = true
			fs[i] = fo
		}
	}
	return fs
}

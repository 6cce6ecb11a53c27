package scenario

import "fmt"

// semaphoreLimit is the number of permits in the "semaphore/" rows, and
// semaphoreWorkers their number of workers: twice the permits, so that
// every permit is held most of the time with a worker waiting for it, and
// a second holder of one permit is usually a holder over the limit.
const (
	semaphoreLimit   = 3
	semaphoreWorkers = 6
)

// semaphores are the "semaphore/" rows: the workers take one of
// semaphoreLimit permits of the lock's name instead of the lock, and each
// permit, a lock of its own, guards a register of its own. The lock
// checkers and the register's then apply to each permit, and the
// over-limit checker counts the holders of all.
var semaphores = family{
	prefix: "semaphore/",
	about: fmt.Sprintf("%d workers take one of %d permits of one name (a counting semaphore; each permit is a lock "+
		"guarding a register of its own); ", semaphoreWorkers, semaphoreLimit),
	apply: func(s *Scenario) {
		s.Limit, s.Workers = semaphoreLimit, semaphoreWorkers
	},
}

// semaphoreRows returns the semaphore rows that must hold and those that
// must be caught, mirroring rows of holds and caught: the main fault
// families (kill and restart, node pause, partition, latency, a restart
// held off by the quarantine), and the restart without quarantine and the
// worker paused past its validity that must be caught. Table gives each
// caught row a "/fenced" variant that must hold, as it does the lock's.
func semaphoreRows(holds, caught []Scenario) (semHolds, semCaught []Scenario) {
	semHolds = semaphores.of(holds, "no-faults", "minority-kill", "minority-partition", "node-pause", "node-slow", "restart-quarantine")
	semHolds[0].About = fmt.Sprintf("%d workers take one of %d permits of one name (a counting semaphore; each permit is a lock "+
		"guarding a register of its own) on five healthy nodes", semaphoreWorkers, semaphoreLimit)
	return semHolds, semaphores.of(caught, "restart-empty", "worker-pause-past-validity")
}

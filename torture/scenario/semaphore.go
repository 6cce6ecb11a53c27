package scenario

import "fmt"

// semaphoreLimit is the number of permits in the "semaphore/" rows, and
// semaphoreWorkers their least number of workers: twice the permits, so
// that every permit is held most of the time with a worker waiting for it,
// and a second holder of one permit is usually a holder over the limit.
// A row of the lock with more workers (a crowd) keeps its own number.
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
	about: func(s Scenario) string {
		return fmt.Sprintf("%d workers take one of %d permits of one name (a counting semaphore; each permit is a lock "+
			"guarding a register of its own)", s.Workers, s.Limit)
	},
	apply: func(s *Scenario) {
		s.Limit, s.Workers = semaphoreLimit, max(s.Workers, semaphoreWorkers)
	},
}

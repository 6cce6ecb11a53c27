package faults

import (
	"errors"

	"github.com/redlock-go/redlock/torture/cluster"
)

// breakLinks cuts links when dir is zero (requests fail at once), and
// otherwise blackholes them in the directions dir (requests time out).
func breakLinks(links []*cluster.Link, dir cluster.Direction) error {
	var errs []error
	for _, l := range links {
		if dir == 0 {
			l.Cut()
			continue
		}
		errs = append(errs, l.Drop(dir))
	}
	return errors.Join(errs...)
}

// healLinks heals links.
func healLinks(links []*cluster.Link) error {
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Heal())
	}
	return errors.Join(errs...)
}

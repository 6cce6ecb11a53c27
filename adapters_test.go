package redlock_test

import (
	"testing"

	"github.com/redlock-go/redlock"
)

// The package's internal tests reach the adapters through these (see
// redlock.GoredisConn).
func init() {
	redlock.GoredisConn = func(t *testing.T, addr string) redlock.Conn { return goredisConns(t, []string{addr})[0] }
	redlock.RueidisConn = func(t *testing.T, addr string) redlock.Conn { return rueidisConns(t, []string{addr})[0] }
}

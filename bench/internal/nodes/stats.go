package nodes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// statsTimeout bounds one INFO request.
const statsTimeout = 2 * time.Second

// Connections returns how many client connections the servers have accepted
// since they started, summed (INFO stats total_connections_received), less
// the connections Connections itself opened to ask. A server that does not
// answer counts 0.
func (s *Set) Connections(ctx context.Context) int64 {
	var total int64
	for _, n := range s.nodes {
		v, err := infoField(ctx, n.addr, "stats", "total_connections_received")
		if err == nil {
			total += v
		}
	}
	s.infos.Add(int64(len(s.nodes)))
	return total - s.probes.Add(int64(len(s.nodes)))
}

// Usage is what one server holds.
type Usage struct {
	UsedMemory int64 // INFO memory used_memory: bytes allocated by the server
	Keys       int64 // keys in database 0 (INFO keyspace)
}

// Usage returns what each server holds, in start order.
func (s *Set) Usage(ctx context.Context) ([]Usage, error) {
	us := make([]Usage, len(s.nodes))
	for i, n := range s.nodes {
		mem, err := infoField(ctx, n.addr, "memory", "used_memory")
		if err != nil {
			return nil, err
		}
		keys, err := keyCount(ctx, n.addr)
		if err != nil {
			return nil, err
		}
		us[i] = Usage{UsedMemory: mem, Keys: keys}
	}
	return us, nil
}

// keyCount returns the keys of database 0 from INFO keyspace, whose line
// "db0:keys=N,expires=…" is absent while the database is empty.
func keyCount(ctx context.Context, addr string) (int64, error) {
	body, err := info(ctx, addr, "keyspace")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(body, "\r\n") {
		if v, ok := strings.CutPrefix(line, "db0:keys="); ok {
			v, _, _ = strings.Cut(v, ",")
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, nil
}

// infoField reads one integer field of INFO section from the server at addr.
func infoField(ctx context.Context, addr, section, field string) (int64, error) {
	body, err := info(ctx, addr, section)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(body, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("nodes: no %s in INFO %s", field, section)
}

// info returns the reply to INFO section from the server at addr, over a
// connection of its own.
func info(ctx context.Context, addr, section string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := fmt.Fprintf(c, "INFO %s\r\n", section); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil {
		return "", fmt.Errorf("nodes: INFO answered %q", strings.TrimSpace(head))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return "", err
	}
	return string(body), nil
}

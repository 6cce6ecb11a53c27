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
	return total - s.probes.Add(int64(len(s.nodes)))
}

// infoField reads one integer field of INFO section from the server at addr.
func infoField(ctx context.Context, addr, section, field string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := fmt.Fprintf(c, "INFO %s\r\n", section); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("nodes: INFO answered %q", strings.TrimSpace(head))
	}
	size, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		return 0, fmt.Errorf("nodes: INFO answered %q", strings.TrimSpace(head))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("nodes: no %s in INFO %s", field, section)
}

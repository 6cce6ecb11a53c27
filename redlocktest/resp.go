package redlocktest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// maxBulk bounds the size of one bulk string that Do accepts.
const maxBulk = 512 << 20

// ErrNil is returned by Node.Do when Redis replies with nil, such as GET of
// a missing key.
var ErrNil = errors.New("redlocktest: nil reply")

// ServerError is an error reply from Redis, such as
// "NOAUTH Authentication required.". Node.Do returns it wrapped.
type ServerError string

// Error returns the reply text, without the leading '-'.
func (e ServerError) Error() string { return string(e) }

// Do sends one command over a new TCP connection (after AUTH when the
// cluster has a password) and returns the reply rendered simply: a simple
// or bulk string as is, an integer in decimal, an array as its elements
// joined by "\n" (nested arrays flattened, nil elements as ""). A nil reply
// returns "" and ErrNil; an error reply returns a wrapped ServerError. Do
// is for test set-up and inspection; it waits on a paused node until ctx is
// done, and fails on a node that is not running with an error wrapping
// ErrNotRunning.
func (n *Node) Do(ctx context.Context, args ...string) (string, error) {
	v, err := do(ctx, n.Addr(), n.conf.password, args)
	if err != nil && !n.Running() {
		// A refused connection says less than why.
		err = fmt.Errorf("%w: %w", ErrNotRunning, err)
	}
	return v, err
}

// do implements Node.Do.
func do(ctx context.Context, addr, password string, args []string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("redlocktest: Do: no command")
	}
	conn, r, err := dial(ctx, addr, password)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	reply, err := roundTrip(conn, r, args...)
	if err != nil && !errors.Is(err, ErrNil) {
		return "", commandError(ctx, addr, args[0], err)
	}
	return reply, err
}

// dial connects to addr, and sends AUTH when password is set, within ctx.
func dial(ctx context.Context, addr, password string) (net.Conn, *bufio.Reader, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("redlocktest: %s: %w", addr, err)
	}
	r := bufio.NewReader(conn)
	if password == "" {
		return conn, r, nil
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := roundTrip(conn, r, "AUTH", password); err != nil {
		conn.Close()
		return nil, nil, commandError(ctx, addr, "AUTH", err)
	}
	return conn, r, nil
}

// commandError wraps err from command cmd, and ctx's error if ctx is done
// (a done ctx shows up as an I/O timeout).
func commandError(ctx context.Context, addr, cmd string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("redlocktest: %s on %s: %w (%w)", cmd, addr, ctxErr, err)
	}
	return fmt.Errorf("redlocktest: %s on %s: %w", cmd, addr, err)
}

// roundTrip writes one command and reads its reply.
func roundTrip(w io.Writer, r *bufio.Reader, args ...string) (string, error) {
	if _, err := w.Write(encodeCommand(args)); err != nil {
		return "", err
	}
	return readReply(r)
}

// encodeCommand encodes args as a RESP array of bulk strings.
func encodeCommand(args []string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// readReply reads one RESP2 reply and renders it as Do documents.
func readReply(r *bufio.Reader) (string, error) {
	line, err := readLine(r)
	if err != nil {
		return "", err
	}
	switch kind, rest := line[0], line[1:]; kind {
	case '+', ':':
		return rest, nil
	case '-':
		return "", ServerError(rest)
	case '$':
		return readBulk(r, rest)
	case '*':
		return readArray(r, rest)
	default:
		return "", fmt.Errorf("unexpected RESP reply %q", line)
	}
}

// readLine reads one CRLF-terminated line, without the CRLF.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line, ok := strings.CutSuffix(line, "\r\n")
	if !ok || line == "" {
		return "", fmt.Errorf("malformed RESP line %q", line)
	}
	return line, nil
}

// readBulk reads the body of a bulk string whose header was "$"+size.
func readBulk(r *bufio.Reader, size string) (string, error) {
	n, err := strconv.Atoi(size)
	if err != nil || n > maxBulk {
		return "", fmt.Errorf("bad RESP bulk length %q", size)
	}
	if n < 0 {
		return "", ErrNil
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	if string(buf[n:]) != "\r\n" {
		return "", errors.New("RESP bulk string not terminated by CRLF")
	}
	return string(buf[:n]), nil
}

// readArray reads the elements of an array whose header was "*"+count.
func readArray(r *bufio.Reader, count string) (string, error) {
	n, err := strconv.Atoi(count)
	if err != nil {
		return "", fmt.Errorf("bad RESP array length %q", count)
	}
	if n < 0 {
		return "", ErrNil
	}
	elems := make([]string, 0, min(n, 1024))
	for range n {
		s, err := readReply(r)
		if err != nil && !errors.Is(err, ErrNil) {
			return "", err
		}
		elems = append(elems, s)
	}
	return strings.Join(elems, "\n"), nil
}

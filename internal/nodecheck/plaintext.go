package nodecheck

import (
	"fmt"
	"net"
	"time"

	"github.com/redlock-go/redlock/internal/nodeurl"
)

// plaintextProbeTimeout bounds the probe of a TLS node that did not answer:
// a plaintext Redis on the same port answers a PING within a round trip.
const plaintextProbeTimeout = 500 * time.Millisecond

// PlaintextBehindTLS returns an error wrapping nodeurl.ErrInvalidURL when
// the TCP address addr of the node name, which its URL says to reach over
// TLS (rediss://), answers PING in plaintext: the TLS handshake then waits
// in vain, and every request would time out with no hint why. It returns
// nil otherwise. Adapters call it from their Probe.
func PlaintextBehindTLS(name, addr string) error {
	raw, err := net.DialTimeout("tcp", addr, plaintextProbeTimeout)
	if err != nil {
		return nil
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(plaintextProbeTimeout))
	if _, err := raw.Write([]byte("PING\r\n")); err != nil {
		return nil
	}
	reply := make([]byte, 1)
	if _, err := raw.Read(reply); err != nil || (reply[0] != '+' && reply[0] != '-') {
		return nil
	}
	return fmt.Errorf("%w: %s: the server answers in plaintext, not TLS: use redis:// for this node", nodeurl.ErrInvalidURL, name)
}

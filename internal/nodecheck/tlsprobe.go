package nodecheck

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/redlock-go/redlock/internal/nodeurl"
)

// tlsProbeTimeout bounds the probe of a TLS node that did not answer: its
// handshake, and then the wait for an alert refusing our certificate, which
// a server that accepted it never sends (the probe then ends here). A
// handshake on loopback or in a region takes a few round trips.
const tlsProbeTimeout = time.Second

// TLSRefused returns an error wrapping nodeurl.ErrInvalidURL and
// nodeurl.ErrTLS when a handshake with config to the TCP address addr of
// the node name, or the server's first word after it, fails on a
// certificate (see nodeurl.IsTLSRefusal). With TLS 1.3 the server refuses
// a client certificate (missing, expired, from another CA) only after the
// client finished its handshake, by an alert that a client library
// writing its first command may never read, seeing a reset connection
// instead. It returns nil otherwise. Adapters call it from their Probe.
func TLSRefused(name, addr string, config *tls.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), tlsProbeTimeout)
	defer cancel()
	d := tls.Dialer{Config: config.Clone()}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		defer conn.Close()
		// Wait for the server's verdict on our certificate without writing:
		// a server that closes with a command of ours unread resets the
		// connection, and the reset can overtake its alert.
		conn.SetDeadline(time.Now().Add(tlsProbeTimeout))
		_, err = conn.Read(make([]byte, 1))
	}
	if err == nil || !nodeurl.IsTLSRefusal(err) {
		return nil
	}
	return fmt.Errorf("%w: %w: %s: %w", nodeurl.ErrInvalidURL, nodeurl.ErrTLS, name, tlsRefusal(err))
}

// tlsRefusal wraps err, a handshake's failure on a certificate, with what
// to look at.
func tlsRefusal(err error) error {
	return fmt.Errorf("the node and this client do not accept each other's certificates "+
		"(see the tls_ca, tls_cert and tls_key parameters): %w", err)
}

// ProbeTLS is the Probe of a node reached over TLS at addr with config:
// its port answering in plaintext (PlaintextBehindTLS), or a handshake
// failing on a certificate (TLSRefused).
func ProbeTLS(name, addr string, config *tls.Config) error {
	if err := PlaintextBehindTLS(name, addr); err != nil {
		return err
	}
	return TLSRefused(name, addr, config)
}

// ProbeTLSAll is ProbeTLS for a node reached through several addresses over
// TLS: the sentinels of a Sentinel-managed master, or the seeds of a Redis
// Cluster. The first address that answers in plaintext or refuses the
// certificate decides.
func ProbeTLSAll(name string, addrs []string, config *tls.Config) error {
	for _, addr := range addrs {
		if err := ProbeTLS(name+" at "+addr, addr, config); err != nil {
			return err
		}
	}
	return nil
}

package redlocktest_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/internal/testcerts"
	"github.com/redlock-go/redlock/redlocktest"
)

// With Options.TLS a node listens for TLS on a port of its own, with the
// certificate given, while Do keeps its plaintext port; options New cannot
// use fail it.
func TestTLS_portBesideThePlaintextOne(t *testing.T) {
	t.Parallel()
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := &redlocktest.TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey}
	c := redlocktest.Start(t, redlocktest.Options{Nodes: 2, Password: "pw", TLS: opts})
	n := c.Node(1)
	want := "rediss://:pw@127.0.0.1:" + strconv.Itoa(n.TLSPort())
	if n.TLSPort() == 0 || n.TLSPort() == n.Port() || n.TLSURL() != want || c.TLSURLs()[1] != want {
		t.Fatalf("TLSPort %d, Port %d, TLSURL %q, TLSURLs %q; want %s", n.TLSPort(), n.Port(), n.TLSURL(), c.TLSURLs(), want)
	}
	expect(t, n, "PONG", "PING")
	pem, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n.TLSPort())), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatalf("TLS handshake with the node: %v", err)
	}
	conn.Close()
	if plain := redlocktest.Start(t, redlocktest.Options{Nodes: 1}).Node(0); plain.TLSPort() != 0 || plain.TLSURL() != "" {
		t.Fatalf("without Options.TLS: TLSPort %d, TLSURL %q", plain.TLSPort(), plain.TLSURL())
	}
	for _, bad := range []redlocktest.Options{
		{TLS: &redlocktest.TLS{CertFile: certs.ServerCert}},
		{TLS: &redlocktest.TLS{CertFile: certs.ServerCert, KeyFile: certs.ServerKey, AuthClients: true}},
		{RedisCluster: true, TLS: opts},
	} {
		if c, err := redlocktest.New(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "Options.TLS") {
			if c != nil {
				c.Close()
			}
			t.Errorf("New(%+v): %v, want an error about Options.TLS", bad, err)
		}
	}
}

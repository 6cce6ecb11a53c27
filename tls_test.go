package redlock_test

import (
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/goredis"
	"github.com/redlock-go/redlock/internal/testcerts"
	"github.com/redlock-go/redlock/redlocktest"
	"github.com/redlock-go/redlock/rueidis"
)

// withTLS returns the TLS URL of node with the query parameters params
// added, each a name and a value.
func withTLS(n *redlocktest.Node, params ...string) string {
	u, _ := url.Parse(n.TLSURL())
	q := u.Query()
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// tlsNode starts one node whose TLS port presents cert and key, and asks
// clients for a certificate signed by ca when authClients is true.
func tlsNode(t *testing.T, certs testcerts.Files, cert, key string, authClients bool) *redlocktest.Node {
	t.Helper()
	return redlocktest.Start(t, redlocktest.Options{Nodes: 1, TLS: &redlocktest.TLS{
		CertFile: cert, KeyFile: key, CAFile: certs.CA, AuthClients: authClients,
	}}).Node(0)
}

// Both adapters reach nodes over TLS as deployed: a server certificate
// signed by a private CA that the URL names (tls_ca), and, where the
// server asks clients for one (tls-auth-clients yes), a client certificate
// and key (tls_cert, tls_key). A CA that did not sign the server's
// certificate, an expired server or client certificate, and a missing
// client certificate fail Dial at once with an error wrapping ErrTLS and
// ErrInvalidURL, naming the node and what was refused, never with a
// timeout or as a node that is down.
func TestDial_tlsAsDeployed(t *testing.T) {
	t.Parallel()
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serverOnly := tlsNode(t, certs, certs.ServerCert, certs.ServerKey, false)
	mutual := tlsNode(t, certs, certs.ServerCert, certs.ServerKey, true)
	expired := tlsNode(t, certs, certs.ExpiredCert, certs.ExpiredKey, false)
	client := []string{"tls_cert", certs.ClientCert, "tls_key", certs.ClientKey}
	works := map[string]string{
		"serverOnlyPrivateCA": withTLS(serverOnly, "tls_ca", certs.CA),
		"mutualTLS":           withTLS(mutual, append([]string{"tls_ca", certs.CA}, client...)...),
		"clientCertNotAsked":  withTLS(serverOnly, append([]string{"tls_ca", certs.CA}, client...)...),
	}
	fails := map[string]struct{ url, says string }{
		"wrongCA":           {withTLS(serverOnly, "tls_ca", certs.OtherCA), "certificate signed by unknown authority"},
		"systemCA":          {serverOnly.TLSURL(), "certificate signed by unknown authority"},
		"expiredServerCert": {withTLS(expired, "tls_ca", certs.CA), "expired"},
		"missingClientCert": {withTLS(mutual, "tls_ca", certs.CA), "certificate required"},
		"expiredClientCert": {withTLS(mutual, "tls_ca", certs.CA, "tls_cert", certs.ExpiredCert, "tls_key", certs.ExpiredKey), "remote error: tls: "},
		"clientCertWrongCA": {withTLS(mutual, "tls_ca", certs.OtherCA), "unknown authority"},
	}
	for _, d := range dialers {
		t.Run(d.name, func(t *testing.T) {
			for name, u := range works {
				t.Run(name, func(t *testing.T) {
					c, err := d.dial(bg, []string{u}, fast())
					if err != nil {
						t.Fatalf("Dial %s: %v", u, err)
					}
					defer c.Close()
					lock, err := c.TryAcquire(bg, "tls-job")
					if err != nil {
						t.Fatalf("TryAcquire over TLS: %v", err)
					}
					if err := lock.Release(bg); err != nil {
						t.Fatalf("Release over TLS: %v", err)
					}
				})
			}
			for name, f := range fails {
				t.Run(name, func(t *testing.T) {
					c, err := d.dial(bg, []string{f.url}, fast())
					if err == nil {
						defer c.Close()
						t.Fatalf("Dial %s succeeded, want a TLS refusal; unreachable: %+v", f.url, c.UnreachableAtDial())
					}
					if !errors.Is(err, goredis.ErrTLS) || !errors.Is(err, rueidis.ErrTLS) || !errors.Is(err, goredis.ErrInvalidURL) ||
						!strings.Contains(err.Error(), f.says) || !strings.Contains(err.Error(), "127.0.0.1:") {
						t.Fatalf("Dial: %v; want ErrTLS and ErrInvalidURL, naming the node and saying %q", err, f.says)
					}
				})
			}
		})
	}
}

// The TLS parameters' files are read when the URL is, and a file that
// cannot be used fails Dial before any node is asked, with an error
// wrapping ErrTLS and ErrInvalidURL that names the file and never shows a
// key's contents; so do the parameters on a URL that is not rediss://,
// and a certificate without its key.
func TestDial_tlsFilesRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certs, err := testcerts.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	keyBody := strings.Split(string(key), "\n")[1] // a line of the key's base64
	const node = "rediss://127.0.0.1:6390"
	missing := dir + "/missing.pem"
	for name, c := range map[string]struct{ url, says string }{
		"missingCA":     {node + "?tls_ca=" + missing, missing},
		"caWithoutPEM":  {node + "?tls_ca=" + certs.ClientKey, "no PEM certificate"},
		"certNoKey":     {node + "?tls_cert=" + certs.ClientCert, "tls_cert and tls_key go together"},
		"keyNoCert":     {node + "?tls_key=" + certs.ClientKey, "tls_cert and tls_key go together"},
		"keyMismatch":   {node + "?tls_cert=" + certs.ClientCert + "&tls_key=" + certs.ServerKey, certs.ServerKey},
		"keyIsACert":    {node + "?tls_cert=" + certs.ClientCert + "&tls_key=" + certs.ClientCert, certs.ClientCert},
		"certIsAKey":    {node + "?tls_cert=" + certs.ClientKey + "&tls_key=" + certs.ClientKey, certs.ClientKey},
		"plainRedisURL": {"redis://127.0.0.1:6390?tls_ca=" + certs.CA, "for rediss:// URLs"},
	} {
		for _, d := range dialers {
			t.Run(name+"/"+d.name, func(t *testing.T) {
				c2, err := d.dial(bg, []string{c.url}, fast())
				if err == nil {
					c2.Close()
					t.Fatalf("Dial %s succeeded", c.url)
				}
				if !errors.Is(err, goredis.ErrTLS) || !errors.Is(err, rueidis.ErrInvalidURL) || !strings.Contains(err.Error(), c.says) {
					t.Fatalf("Dial: %v; want ErrTLS and ErrInvalidURL, saying %q", err, c.says)
				}
				if strings.Contains(err.Error(), keyBody) || strings.Contains(err.Error(), "PRIVATE KEY") {
					t.Fatalf("Dial's error shows key material: %v", err)
				}
			})
		}
	}
}

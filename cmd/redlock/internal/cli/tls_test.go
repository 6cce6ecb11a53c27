package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/redlock-go/redlock/internal/testcerts"
	"github.com/redlock-go/redlock/redlocktest"
)

// newTLSCluster starts n new nodes whose TLS ports ask clients for a
// certificate (tls-auth-clients yes), with certificates of a private CA,
// and returns the certificates and the --nodes value of the TLS ports.
func newTLSCluster(t *testing.T, n int) (testcerts.Files, string) {
	t.Helper()
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := redlocktest.Start(t, redlocktest.Options{Nodes: n, Unmarked: true, TLS: &redlocktest.TLS{
		CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, AuthClients: true,
	}})
	return certs, strings.Join(c.TLSURLs(), ",")
}

// The TLS flags give every rediss:// node a CA, a client certificate and
// its key, as redis-cli's --cacert, --cert and --key do (which they take
// as aliases), and so do $REDLOCK_TLS_CA, _CERT and _KEY when the flags are
// absent. A node that refuses the client (no certificate) or a CA that did
// not sign the server's is a configuration error, exit 78, naming the
// files and never what the key holds; so are TLS flags with no rediss://
// node.
func TestTLS_flagsAndEnvironment(t *testing.T) {
	certs, nodes := newTLSCluster(t, 3)
	files := []string{"--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ClientKey}
	cli(t, append([]string{"init", "--nodes", nodes}, files...)...).expect(t, exitOK, "init over mutual TLS")
	cli(t, "acquire", "--nodes", nodes, "--cacert", certs.CA, "--cert", certs.ClientCert, "--key", certs.ClientKey, "job").
		expect(t, exitOK, "acquire with redis-cli's flags")
	cli(t, append([]string{"doctor", "--nodes", nodes}, files...)...).expect(t, exitOK, "doctor over mutual TLS")

	key, err := os.ReadFile(certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	keyLine := strings.Split(string(key), "\n")[1]
	refused := func(r result, what, says string) {
		t.Helper()
		r.expect(t, exitConfig, what)
		if !strings.Contains(r.stderr, says) {
			t.Errorf("%s: stderr does not say %q:\n%s", what, says, r.stderr)
		}
		if out := r.stdout + r.stderr; strings.Contains(out, keyLine) || strings.Contains(out, "PRIVATE KEY") {
			t.Errorf("%s: the output shows key material:\n%s", what, out)
		}
	}
	refused(cli(t, "acquire", "--nodes", nodes, "--tls-ca", certs.CA, "job2"), "acquire without a client certificate", "certificate required")
	refused(cli(t, append([]string{"acquire", "--nodes", nodes, "--tls-ca", certs.OtherCA}, append(files[2:], "job2")...)...), "acquire with another CA", "unknown authority")
	refused(cli(t, "acquire", "--nodes", nodes, "--tls-ca", certs.CA, "--tls-cert", certs.ClientCert, "--tls-key", certs.ServerKey, "job2"),
		"acquire with a key of another certificate", certs.ServerKey)
	refused(cli(t, "acquire", "--nodes", "redis://127.0.0.1:6390", "--tls-ca", certs.CA, "job2"), "TLS flags without a rediss:// node", "no node is rediss://")

	t.Setenv(envTLSCA, certs.CA)
	t.Setenv(envTLSCert, certs.ClientCert)
	t.Setenv(envTLSKey, certs.ClientKey)
	cli(t, "acquire", "--nodes", nodes, "job3").expect(t, exitOK, "acquire with $REDLOCK_TLS_*")
	refused(cli(t, "acquire", "--nodes", nodes, "--tls-ca", certs.OtherCA, "job4"), "--tls-ca over $REDLOCK_TLS_CA", "unknown authority")
}

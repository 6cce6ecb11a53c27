package nodeurl

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// ErrTLS means a rediss:// node's TLS set-up is wrong: a file of its
// tls_ca, tls_cert or tls_key parameters cannot be used, or the node and
// the client do not accept each other's certificates (an unknown CA, an
// expired certificate, a client certificate missing or refused). The
// errors that wrap it wrap ErrInvalidURL too: no retry cures them.
// goredis.ErrTLS and rueidis.ErrTLS are this one value.
var ErrTLS = errors.New("redlock: TLS set-up")

// The query parameters of a rediss:// URL that name PEM files, as
// redis-cli's --cacert, --cert and --key do.
const (
	ParamCA   = "tls_ca"   // the CA certificates that sign the servers' certificates
	ParamCert = "tls_cert" // the client certificate, for tls-auth-clients yes
	ParamKey  = "tls_key"  // the client certificate's private key
)

// TLSFiles are the files a node URL's TLS parameters name.
type TLSFiles struct {
	CA, Cert, Key string
}

// SplitTLS returns raw without its TLS parameters (see ParamCA), for a
// client library's parser, which does not know them, and the files they
// name. u is raw parsed. Errors wrap ErrInvalidURL and ErrTLS: the
// parameters on a URL that is not rediss://, or a certificate without its
// key.
func SplitTLS(raw string, u *url.URL) (string, TLSFiles, error) {
	q := u.Query()
	files := TLSFiles{CA: q.Get(ParamCA), Cert: q.Get(ParamCert), Key: q.Get(ParamKey)}
	if !q.Has(ParamCA) && !q.Has(ParamCert) && !q.Has(ParamKey) {
		return raw, files, nil
	}
	fail := func(why string) (string, TLSFiles, error) {
		return "", TLSFiles{}, fmt.Errorf("%w: %w: %s: %s", ErrInvalidURL, ErrTLS, Redact(raw), why)
	}
	switch {
	case u.Scheme != "rediss":
		return fail(ParamCA + ", " + ParamCert + " and " + ParamKey + " are for rediss:// URLs")
	case (files.Cert == "") != (files.Key == ""):
		return fail(ParamCert + " and " + ParamKey + " go together: a client certificate and its private key")
	}
	v := *u
	q.Del(ParamCA)
	q.Del(ParamCert)
	q.Del(ParamKey)
	v.RawQuery = q.Encode()
	return v.String(), files, nil
}

// Apply loads the files into c, a client library's TLS configuration for
// the node (nil when the URL is not rediss://, which SplitTLS refused
// already): the CA certificates replace the system's roots, and the
// client certificate is presented to servers that ask for one. It reads
// the files now, so that a missing or unreadable one fails at once. raw
// names the node in errors, which wrap ErrInvalidURL and ErrTLS and name
// the files, never their contents.
func (f TLSFiles) Apply(raw string, c *tls.Config) error {
	if c == nil || f == (TLSFiles{}) {
		return nil
	}
	fail := func(err error) error {
		return fmt.Errorf("%w: %w: %s: %w", ErrInvalidURL, ErrTLS, Redact(raw), err)
	}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", ParamCA, err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fail(fmt.Errorf("%s %s: no PEM certificate in it", ParamCA, f.CA))
		}
		c.RootCAs = pool
	}
	if f.Cert != "" {
		pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return fail(fmt.Errorf("%s %s, %s %s: %w", ParamCert, f.Cert, ParamKey, f.Key, err))
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return nil
}

// IsTLSRefusal reports whether err, from a node's first request, says
// that the TLS handshake failed on a certificate: the server's was not
// accepted (unknown CA, expired, another name), or the server refused the
// client's (missing, expired, unknown CA), which it tells by a TLS alert.
// Retrying cures none of them.
func IsTLSRefusal(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &host):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "remote error: tls: ") || strings.Contains(msg, "x509: ")
}

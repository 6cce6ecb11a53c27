package redlocktest

import (
	"errors"
	"net"
	"net/url"
	"strconv"
)

// TLS makes every node listen for TLS connections on a second port
// (tls-port), beside its plaintext port, which Node.Do and the start-up
// checks keep using. Node.TLSURL and Cluster.TLSURLs are the rediss://
// URLs of the TLS ports. The files are PEM, read by redis-server when
// it starts. The nodes must be independent servers (not
// Options.RedisCluster).
type TLS struct {
	// CertFile and KeyFile are the server's certificate and its private
	// key (tls-cert-file, tls-key-file); both are needed.
	CertFile, KeyFile string
	// CAFile holds the CA certificates that client certificates must
	// chain to (tls-ca-cert-file); needed with AuthClients.
	CAFile string
	// AuthClients makes the nodes ask every TLS client for a certificate
	// and refuse a client without a valid one (tls-auth-clients yes, as
	// redis-server does by default). False means tls-auth-clients no.
	AuthClients bool
}

// errTLSOptions is the error of Options.TLS that New cannot use.
var errTLSOptions = errors.New("redlocktest: Options.TLS")

// check returns what is wrong with t, or nil.
func (t *TLS) check(cluster bool) error {
	switch {
	case t == nil:
		return nil
	case t.CertFile == "" || t.KeyFile == "":
		return errors.Join(errTLSOptions, errors.New("CertFile and KeyFile are both needed"))
	case t.AuthClients && t.CAFile == "":
		return errors.Join(errTLSOptions, errors.New("AuthClients needs CAFile"))
	case cluster:
		return errors.Join(errTLSOptions, errors.New("not with RedisCluster"))
	}
	return nil
}

// clone returns a copy of t, or nil.
func clone(t *TLS) *TLS {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// lines returns the redis.conf lines of t for a node whose TLS port is
// port, or nil when t is nil.
func (t *TLS) lines(port int) []string {
	if t == nil {
		return nil
	}
	auth := "no"
	if t.AuthClients {
		auth = "yes"
	}
	lines := []string{
		"tls-port " + strconv.Itoa(port),
		"tls-cert-file " + quote(t.CertFile),
		"tls-key-file " + quote(t.KeyFile),
		"tls-auth-clients " + auth,
	}
	if t.CAFile != "" {
		lines = append(lines, "tls-ca-cert-file "+quote(t.CAFile))
	}
	return lines
}

// pickTLSPort chooses the node's TLS port, if it has one, apart from its
// other ports.
func (n *Node) pickTLSPort() (err error) {
	if n.conf.tls == nil {
		return nil
	}
	for n.tlsPort = n.port; n.tlsPort == n.port || n.tlsPort == n.busPort; {
		if n.tlsPort, err = freePort(0); err != nil {
			return err
		}
	}
	return nil
}

// TLSPort returns the node's TLS port on 127.0.0.1, or 0 without
// Options.TLS.
func (n *Node) TLSPort() int { return n.tlsPort }

// TLSURL returns "rediss://127.0.0.1:tlsport", with the password as URL
// has it, or "" without Options.TLS. A client needs the CA of the node's
// certificate, and with TLS.AuthClients a certificate of its own.
func (n *Node) TLSURL() string {
	if n.tlsPort == 0 {
		return ""
	}
	u, _ := url.Parse(n.URL())
	u.Scheme, u.Host = "rediss", net.JoinHostPort(host, strconv.Itoa(n.tlsPort))
	return u.String()
}

// TLSURLs returns every node's TLSURL, in index order.
func (c *Cluster) TLSURLs() []string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.TLSURL()
	}
	return urls
}

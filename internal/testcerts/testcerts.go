// Package testcerts writes the certificates that the TLS tests of this
// repository give redis-server and the clients: a private CA, certificates
// it signs for a server on 127.0.0.1 and for a client, expired ones, and
// an unrelated CA. Test code only.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the paths of the PEM files Write wrote: each certificate, and
// beside it (…Key) its private key.
type Files struct {
	CA                      string // the private CA that signs the others
	OtherCA                 string // a CA that signed none of them
	ServerCert, ServerKey   string // for 127.0.0.1 and localhost, signed by CA
	ClientCert, ClientKey   string // a client certificate signed by CA
	ExpiredCert, ExpiredKey string // a server and client certificate signed by CA, expired
}

// authority is a CA that signs certificates.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Write writes the certificates of Files in dir, which must exist.
func Write(dir string) (Files, error) {
	f := Files{
		CA: filepath.Join(dir, "ca.pem"), OtherCA: filepath.Join(dir, "other-ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
		ExpiredCert: filepath.Join(dir, "expired.pem"), ExpiredKey: filepath.Join(dir, "expired-key.pem"),
	}
	now := time.Now()
	ca, err := newAuthority("redlock test CA", f.CA)
	if err != nil {
		return Files{}, err
	}
	if _, err := newAuthority("unrelated CA", f.OtherCA); err != nil {
		return Files{}, err
	}
	server := leaf("127.0.0.1", now.Add(-time.Hour), now.Add(24*time.Hour))
	client := leaf("redlock client", now.Add(-time.Hour), now.Add(24*time.Hour))
	expired := leaf("127.0.0.1", now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	for _, c := range []struct {
		tmpl            *x509.Certificate
		certPath, keyAt string
	}{{server, f.ServerCert, f.ServerKey}, {client, f.ClientCert, f.ClientKey}, {expired, f.ExpiredCert, f.ExpiredKey}} {
		if err := ca.sign(c.tmpl, c.certPath, c.keyAt); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

// newAuthority makes a self-signed CA and writes its certificate to path.
func newAuthority(name, path string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-72 * time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key}, writePEM(path, "CERTIFICATE", der)
}

// leaf is the template of a certificate for a server at 127.0.0.1 (and
// localhost) and for a client alike, valid from notBefore to notAfter.
func leaf(name string, notBefore, notAfter time.Time) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
}

// sign makes a key pair, signs tmpl for it, and writes the certificate and
// the key.
func (a *authority) sign(tmpl *x509.Certificate, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(keyPath, "PRIVATE KEY", keyDER)
}

// serial returns a random certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// writePEM writes one PEM block to path, readable by its owner only.
func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

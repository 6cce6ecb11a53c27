package cli

import (
	"flag"
	"fmt"
	"net/url"
	"os"

	"github.com/redlock-go/redlock/goredis"
)

// The environment variables that stand for the TLS flags when these are
// absent.
const (
	envTLSCA   = "REDLOCK_TLS_CA"
	envTLSCert = "REDLOCK_TLS_CERT"
	envTLSKey  = "REDLOCK_TLS_KEY"
)

// tlsFile is one TLS flag: the file it names, the environment variable
// that stands for it, and the query parameter of a rediss:// node URL it
// becomes.
type tlsFile struct {
	flag, env, param string
	path             string
}

// tlsFlags are --tls-ca, --tls-cert and --tls-key, which give every
// rediss:// node the files of its URL's tls_ca, tls_cert and tls_key
// parameters.
type tlsFlags struct {
	files []*tlsFile
}

// register adds the TLS flags to fs, with redis-cli's spellings (--cacert,
// --cert, --key) as aliases.
func (t *tlsFlags) register(fs *flag.FlagSet) {
	t.files = []*tlsFile{
		{flag: "tls-ca", env: envTLSCA, param: "tls_ca"},
		{flag: "tls-cert", env: envTLSCert, param: "tls_cert"},
		{flag: "tls-key", env: envTLSKey, param: "tls_key"},
	}
	fs.StringVar(&t.files[0].path, "tls-ca", "",
		"PEM `file` of the CA certificates that sign the rediss:// nodes' certificates, instead of the system's; "+
			"$"+envTLSCA+" when absent")
	fs.StringVar(&t.files[1].path, "tls-cert", "",
		"PEM `file` of the client certificate for rediss:// nodes that ask for one (tls-auth-clients yes, "+
			"redis-server's default), with --tls-key; $"+envTLSCert+" when absent")
	fs.StringVar(&t.files[2].path, "tls-key", "",
		"PEM `file` of --tls-cert's private key, never printed; $"+envTLSKey+" when absent")
	aliasVar(fs, "cacert", "tls-ca", "", "redis-cli's --cacert: --tls-ca `FILE`")
	aliasVar(fs, "cert", "tls-cert", "", "redis-cli's --cert: --tls-cert `FILE`")
	aliasVar(fs, "key", "tls-key", "", "redis-cli's --key: --tls-key `FILE`")
}

// apply returns urls with the TLS files of the flags, else of their
// environment variables, added to each rediss:// URL as query parameters,
// unless the URL gives that parameter itself. Files given for a list
// without a rediss:// URL are an error: the nodes would not use them.
func (t *tlsFlags) apply(fs *flag.FlagSet, urls []string) ([]string, error) {
	set := map[string]bool{} // the flags given, by themselves or by an alias
	fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		set[aliasOf(f)] = true
	})
	given := map[string]string{} // by query parameter
	var names []string
	for _, f := range t.files {
		path, name := f.path, "--"+f.flag
		if !set[f.flag] {
			path, name = os.Getenv(f.env), "$"+f.env
		}
		if path != "" {
			given[f.param] = path
			names = append(names, name)
		}
	}
	if len(given) == 0 {
		return urls, nil
	}
	out := make([]string, len(urls))
	tls := false
	for i, raw := range urls {
		out[i] = raw
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "rediss" {
			continue // Dial says what is wrong with a URL that does not parse
		}
		tls = true
		q := u.Query()
		for param, path := range given {
			if !q.Has(param) {
				q.Set(param, path)
			}
		}
		u.RawQuery = q.Encode()
		out[i] = u.String()
	}
	if !tls {
		return nil, fmt.Errorf("%w: %v given, but no node is rediss://: TLS files are for nodes reached over TLS",
			goredis.ErrTLS, names)
	}
	return out, nil
}

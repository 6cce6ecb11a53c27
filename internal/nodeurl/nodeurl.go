// Package nodeurl holds what the adapters share about node URLs: the error
// a malformed one wraps, the first checks every form goes through, and the
// redaction of passwords from URLs and from messages about them.
package nodeurl

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalidURL means a node URL could not be parsed, or names something it
// cannot reach as written (a node that refuses its credentials or its
// database, say). goredis.ErrInvalidURL and rueidis.ErrInvalidURL
// are this one value, so that errors.Is holds whichever adapter dialed.
var ErrInvalidURL = errors.New("redlock: invalid node URL")

// secretParams are the query parameters that hold passwords.
var secretParams = []string{"password", "sentinel_password"}

// Parse parses raw and checks what every form of node URL needs: a redis,
// rediss or unix scheme, and a host unless it is a unix socket. Errors
// wrap ErrInvalidURL and never contain a password.
func Parse(raw string) (*url.URL, error) {
	if err := checkWritten(raw); err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the url.Error quotes raw, password included
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidURL, Redact(raw), err)
	}
	if err := checkParts(u); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidURL, Redact(raw), err)
	}
	return u, nil
}

// checkWritten refuses what cannot be parsed as a node URL safely: an
// empty string, a URL without its scheme (or with a scheme that lacks its
// ':'), and a user name or password with characters that would end it.
func checkWritten(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return fmt.Errorf("%w: an empty URL (a list with a comma too many?)", ErrInvalidURL)
	}
	if strings.Contains(raw, "://") {
		return checkUserinfo(raw)
	}
	if scheme, rest, typo := missingColon(raw); typo {
		fixed := Redact(scheme + "://" + rest)
		return fmt.Errorf("%w: %s//…: the scheme lacks its ':': write %s", ErrInvalidURL, scheme, fixed)
	}
	if path, ok := strings.CutPrefix(raw, "unix:"); ok {
		return fmt.Errorf("%w: %s: not a URL: write a socket's absolute path after unix://, as in unix:///path/to/redis.sock",
			ErrInvalidURL, Redact("unix://"+strings.TrimLeft(path, "/")))
	}
	if err := checkUserinfo("redis://" + raw); err != nil {
		return err
	}
	withScheme := strings.TrimPrefix(Redact("redis://"+raw), "redis://")
	return fmt.Errorf("%w: %s: not a URL: write redis://%s (rediss:// for TLS)", ErrInvalidURL, withScheme, withScheme)
}

// checkParts checks the parts of a parsed node URL: its query's encoding,
// its scheme, its host and ports, its database and its cluster parameter.
func checkParts(u *url.URL) error {
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		// Query drops such a parameter, a password say, without a word.
		return errors.New("a query parameter is not URL-encoded: write a % in a value as %25")
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Host == "" {
			return errors.New("no host")
		}
		for _, hostport := range append([]string{u.Host}, u.Query()["addr"]...) {
			if err := checkHostPort(hostport); err != nil {
				return err
			}
		}
	case "unix":
		if u.Host != "" {
			// unix://dir/r.sock reads "dir" as a host, which the clients
			// drop: the socket would be /r.sock.
			return fmt.Errorf("a unix socket's URL has no host (%q): write its absolute path after unix://, as in unix:///path/to/redis.sock", u.Host)
		}
		if u.Path == "" || u.Path == "/" {
			return errors.New("no socket path: write it after unix://, as in unix:///path/to/redis.sock")
		}
		if strings.HasSuffix(u.Path, "/") {
			return fmt.Errorf("%s ends in '/', a directory: write the socket's own path, as in unix:///path/to/redis.sock", u.Path)
		}
	default:
		return errors.New("scheme must be redis, rediss or unix")
	}
	if err := checkDB(u); err != nil {
		return err
	}
	return checkCluster(u.Query())
}

// checkDB refuses a database number that is not a whole number from 0, in
// the path of a redis:// or rediss:// URL or in a db parameter: go-redis
// took a negative one for database 0, where rueidis refuses it.
func checkDB(u *url.URL) error {
	dbs := u.Query()["db"]
	if u.Scheme != "unix" {
		if path := strings.Trim(u.Path, "/"); path != "" && !strings.Contains(path, "/") {
			dbs = append(dbs, path)
		}
	}
	for _, db := range dbs {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return fmt.Errorf("database %q is not a number from 0", db)
		}
	}
	return nil
}

// checkCluster refuses a cluster parameter that does not say yes: its
// presence names a Redis Cluster, so "cluster=0" or "cluster=false" would
// silently mean the opposite of what it says.
func checkCluster(q url.Values) error {
	for _, v := range q["cluster"] {
		switch strings.ToLower(v) {
		case "", "1", "true", "yes":
		default:
			return fmt.Errorf("cluster=%s: the cluster parameter names a Redis Cluster and takes 1 (or true); "+
				"leave it out for a single server", v)
		}
	}
	return nil
}

// missingColon reports a URL whose scheme lost its colon ("redis//host",
// "rediss//:pw@host"), with the scheme and the rest after its "//".
func missingColon(raw string) (scheme, rest string, typo bool) {
	for _, scheme := range []string{"rediss", "redis", "unix"} {
		if rest, ok := strings.CutPrefix(raw, scheme+"//"); ok {
			return scheme, rest, true
		}
	}
	return "", "", false
}

// checkUserinfo refuses a URL whose user name or password holds '#', '/'
// or '?' unencoded: the host would end there, the rest of the password
// becoming a fragment, a path or a query (and its beginning a host or a
// port), and messages about the URL could show it. An '@' in a query
// value ("?client_name=svc@h") is data, after a host that parses; a
// fragment is never part of a node URL. The error shows the scheme only.
func checkUserinfo(raw string) error {
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	at := strings.IndexByte(rest, '@')
	switch {
	case strings.Contains(rest, "#") && at < 0:
		before, _, _ := strings.Cut(raw, "#") // what follows may be a parameter's secret
		return fmt.Errorf("%w: %s#…: a '#' ends a URL, and a fragment is no part of a node URL; in a parameter's value, write it %%23",
			ErrInvalidURL, Redact(before))
	case strings.Contains(rest, "#"):
	case at < 0 || end < 0 || at < end:
		return nil // no '@', or it ends the userinfo before the host ends
	case scheme == "unix" && end == 0:
		return nil // unix:///path, the '@' in the socket's path
	case inQueryValue(rest, at) && hostPort(rest[:end]):
		return nil
	}
	return fmt.Errorf("%w: %s://xxxxx: percent-encode '#', '/', '?' and '@' in a user name or password (%%23, %%2F, %%3F, %%40)",
		ErrInvalidURL, scheme)
}

// inQueryValue reports whether position at of rest lies in the value of a
// key=value parameter of its query.
func inQueryValue(rest string, at int) bool {
	q := strings.IndexByte(rest, '?')
	if q < 0 || q > at {
		return false
	}
	param := rest[q+1 : at]
	if amp := strings.LastIndexByte(param, '&'); amp >= 0 {
		param = param[amp+1:]
	}
	return strings.Contains(param, "=")
}

// hostPort reports whether authority is a host with an optional numeric
// port, as the part of a URL before its path or query must be.
func hostPort(authority string) bool {
	host, port, err := net.SplitHostPort(authority)
	if err != nil {
		return authority != "" && !strings.Contains(authority, ":")
	}
	n, err := strconv.Atoi(port)
	return host != "" && err == nil && n >= 1 && n <= 65535
}

// checkHostPort refuses a host:port without its host (redis://:6379, as
// from an empty variable, which would mean this machine) or whose port is
// not a number from 1 to 65535; a host without a port gets the default
// one.
func checkHostPort(hostport string) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil // no port: the default
	}
	if host == "" {
		return fmt.Errorf("no host before the port in %s: write 127.0.0.1%s for this machine", hostport, hostport)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q of %s is not a number from 1 to 65535", port, hostport)
	}
	return nil
}

// Invalid returns an error wrapping ErrInvalidURL for raw, whose URL u a
// client library refused with err: its message with u's passwords
// replaced.
func Invalid(raw string, u *url.URL, err error) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidURL, Redact(raw), RedactSecrets(err.Error(), u))
}

// Redact returns raw with any password replaced by "xxxxx", in the
// userinfo and in the password and sentinel_password parameters, also when
// raw does not parse.
func Redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		query, secret := redactQuery(u.RawQuery)
		if u.User == nil && !secret {
			return raw // as written: "redis://" stays so
		}
		u.RawQuery = query
		return u.Redacted()
	}
	scheme := strings.Index(raw, "://")
	at := strings.LastIndex(raw, "@")
	if scheme < 0 || at < scheme {
		return raw
	}
	userinfo := raw[scheme+3 : at]
	if colon := strings.Index(userinfo, ":"); colon >= 0 {
		userinfo = userinfo[:colon+1] + "xxxxx"
	}
	return raw[:scheme+3] + userinfo + raw[at:]
}

// redactQuery returns rawQuery with the values of its password parameters
// replaced, and whether it had any: read pair by pair, so that a value
// that is not URL-encoded, which url.ParseQuery drops, is replaced too.
func redactQuery(rawQuery string) (string, bool) {
	if rawQuery == "" {
		return "", false
	}
	pairs := strings.Split(rawQuery, "&")
	secret := false
	for i, pair := range pairs {
		key, value, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if value != "" && slices.Contains(secretParams, key) {
			pairs[i], secret = key+"=xxxxx", true
		}
	}
	return strings.Join(pairs, "&"), secret
}

// RedactSecrets replaces the passwords of u, userinfo and query, in msg.
func RedactSecrets(msg string, u *url.URL) string {
	secrets := make([]string, 0, len(secretParams)+1)
	for _, k := range secretParams {
		secrets = append(secrets, u.Query().Get(k))
	}
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p)
	}
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}

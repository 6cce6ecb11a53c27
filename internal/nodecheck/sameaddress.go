package nodecheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"

	"github.com/redlock-go/redlock"
	"github.com/redlock-go/redlock/internal/nodeurl"
)

// sameAddress returns an error wrapping redlock.ErrDuplicateNode for each
// entry of urls that names an address an earlier one names too (its host
// resolved: 127.0.0.1 and localhost meet), naming both. Unlike the
// run_id that Check compares, it needs no answer from the server: a
// server that Dial cannot reach, listed twice, would otherwise count
// twice once it answers. URLs of a Sentinel-managed master or of a Redis
// Cluster name other servers than the one that votes, and are left out,
// as are hosts that do not resolve.
func sameAddress(ctx context.Context, urls []string) error {
	var errs []error
	first := map[string]int{}
	for i, raw := range urls {
		addrs := addresses(ctx, raw)
		for _, a := range addrs {
			if j, seen := first[a]; seen && j != i {
				errs = append(errs, fmt.Errorf("%w: %s and %s reach one server (at %s)", redlock.ErrDuplicateNode,
					nodeurl.Redact(urls[j]), nodeurl.Redact(raw), a))
				break
			}
		}
		for _, a := range addrs {
			if _, seen := first[a]; !seen {
				first[a] = i
			}
		}
	}
	return errors.Join(errs...)
}

// addresses returns the addresses that the URL raw may reach: each of its
// host's addresses with its port, or its socket's path; none for a URL of
// a Sentinel-managed master or a Redis Cluster, or a host that does not
// resolve.
func addresses(ctx context.Context, raw string) []string {
	u, err := nodeurl.Parse(raw)
	if err != nil || u.Query().Has("master_name") || u.Query().Has("cluster") {
		return nil
	}
	if u.Scheme == "unix" {
		return []string{"unix:" + filepath.Clean(u.Path)}
	}
	host, port := hostPort(u)
	if ip := net.ParseIP(host); ip != nil {
		return []string{net.JoinHostPort(ip.String(), port)}
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil
	}
	addrs := make([]string, len(ips))
	for i, ip := range ips {
		addrs[i] = net.JoinHostPort(ip.IP.String(), port)
	}
	return addrs
}

// hostPort returns u's host and port, 6379 when it names none.
func hostPort(u *url.URL) (host, port string) {
	host, port = u.Hostname(), u.Port()
	if port == "" {
		port = "6379"
	}
	return host, port
}

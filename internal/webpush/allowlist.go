package webpush

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultPushServices are the hosts of the push services browsers hand out
// endpoints for: Chrome (Firebase Cloud Messaging), Firefox (Mozilla
// autopush), Safari (Apple Web Push) and Edge (Windows Push Notification
// Services). "*.suffix" admits every subdomain of suffix, not suffix itself.
const DefaultPushServices = "fcm.googleapis.com," +
	"updates.push.services.mozilla.com,*.push.services.mozilla.com," +
	"web.push.apple.com,*.push.apple.com," +
	"*.notify.windows.com"

// ErrEndpointNotAllowed is matched by an endpoint that is not on a push
// service of the allow-list: another host, an IP literal in any notation,
// another port, or (at send time) a name that resolves to a non-public
// address. It also matches ErrInvalidEndpoint: such a subscription can never
// be sent to and is deleted.
var ErrEndpointNotAllowed = fmt.Errorf("%w: not an allowed push service", ErrInvalidEndpoint)

func notAllowedError(reason string) error {
	return &SubscriptionError{Field: "endpoint", Reason: reason, kind: ErrEndpointNotAllowed}
}

// HostList is the allow-list of push service hosts. The zero value is
// DefaultPushServices.
type HostList struct {
	entries []hostEntry
}

type hostEntry struct {
	host   string // lower case; without "*." when suffix
	suffix bool
	port   string // "" admits only the scheme's default port
	// path, when set, is the only path prefix the entry admits ("/…/", case
	// as written): the local push service's entry names its endpoint path,
	// not every route of the runner's address.
	path string
}

var defaultHosts = func() HostList {
	l, err := ParseHostList(DefaultPushServices)
	if err != nil {
		panic(err)
	}
	return l
}()

// ParseHostList reads a comma-separated list of "host", "*.domain" and
// "host:port" entries, each optionally followed by a path prefix ending in
// "/" ("127.0.0.1:3000/_dev/push/endpoints/"), which then admits only
// endpoints under that path. Hosts are DNS names; the only IP literals
// accepted are loopback addresses with a port, which name a local push
// service (they admit nothing unless ValidationOptions.AllowInsecureLoopback
// is also set). An empty string is the empty list, which the zero HostList
// replaces with the defaults.
func ParseHostList(s string) (HostList, error) {
	var l HostList
	if strings.TrimSpace(s) == "" {
		return l, nil
	}
	for raw := range strings.SplitSeq(s, ",") {
		e, err := parseHostEntry(strings.TrimSpace(raw))
		if err != nil {
			return HostList{}, fmt.Errorf("push endpoint allow-list entry %q: %w", strings.TrimSpace(raw), err)
		}
		l.entries = append(l.entries, e)
	}
	return l, nil
}

func parseHostEntry(s string) (hostEntry, error) {
	var e hostEntry
	if s == "" {
		return e, errors.New("empty")
	}
	var prefix string
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, prefix = s[:i], s[i:]
		if !cleanPathPrefix(prefix) {
			return e, errors.New(`a path must be a clean prefix ending in "/", such as /push/`)
		}
	}
	s = strings.ToLower(s)
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return e, errors.New("port must be 1-65535")
		}
		host, port = h, p
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if !addr.IsLoopback() || port == "" {
			return e, errors.New("an IP literal must be a loopback address with a port")
		}
		return hostEntry{host: addr.String(), port: port, path: prefix}, nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		e.suffix, host = true, rest
		if !strings.Contains(host, ".") {
			return e, errors.New(`"*." needs a domain of at least two labels`)
		}
	}
	if !isDNSName(host) {
		return e, errors.New("not a DNS host name")
	}
	e.host, e.port, e.path = host, port, prefix
	return e, nil
}

// cleanPathPrefix accepts "/", or "/a/b/": no empty, "." or ".." segment,
// nothing percent-encoded.
func cleanPathPrefix(p string) bool {
	return strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") && !strings.Contains(p, "%") &&
		(p == "/" || path.Clean(p)+"/" == p)
}

// underPath reports whether an endpoint's path lies under prefix: a clean
// path (no empty, "." or ".." segment, nothing percent-encoded, which a
// server would decode or clean into another route) with at least one
// character after the prefix.
func underPath(u *url.URL, prefix string) bool {
	p := u.EscapedPath()
	return len(p) > len(prefix) && strings.HasPrefix(p, prefix) && p == u.Path &&
		path.Clean(p) == p
}

// isDNSName accepts lower-case letter-digit-hyphen labels whose last label is
// not numeric (a numeric last label makes a URL host an IPv4 address).
func isDNSName(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return !looksNumeric(labels[len(labels)-1])
}

// looksNumeric is the WHATWG URL "ends in a number" test for one label: all
// digits, or 0x followed by hex digits. Such a host is an IPv4 address in
// some notation (decimal 2852039166, hex 0xA9FEA9FE, octal 0251.…, 127.1).
func looksNumeric(label string) bool {
	if label == "" {
		return false
	}
	if h, ok := strings.CutPrefix(label, "0x"); ok {
		for i := 0; i < len(h); i++ {
			if !strings.ContainsRune("0123456789abcdef", rune(h[i])) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(label); i++ {
		if label[i] < '0' || label[i] > '9' {
			return false
		}
	}
	return true
}

// allows checks an endpoint's host, port and path for its scheme.
func (l HostList) allows(u *url.URL, allowLoopback bool) error {
	scheme, rawHost, port := u.Scheme, u.Hostname(), u.Port()
	entries := l.entries
	if entries == nil {
		entries = defaultHosts.entries
	}
	host := strings.ToLower(rawHost)
	if strings.Contains(host, ":") || !isDNSName(host) {
		// An IP literal (or something a resolver might read as one).
		addr, err := netip.ParseAddr(host)
		if err != nil || !allowLoopback || !addr.IsLoopback() || addr.Zone() != "" || addr.String() != host {
			return notAllowedError("must name a push service, not an IP address")
		}
		host = addr.String()
	}
	defaultPort := "443"
	if scheme == "http" {
		defaultPort = "80"
	}
	outside := false // the host is listed, the path is not under its prefix
	for _, e := range entries {
		if e.port == "" && port != "" && port != defaultPort {
			continue
		}
		if e.port != "" && port != e.port {
			continue
		}
		if e.host == host && !e.suffix || e.suffix && strings.HasSuffix(host, "."+e.host) {
			if e.path != "" && !underPath(u, e.path) {
				outside = true
				continue
			}
			return nil
		}
	}
	if outside {
		return notAllowedError("is not under the push service's endpoint path")
	}
	return notAllowedError("is not on a push service of the allow-list")
}

// dialable reports whether the Sender may connect to addr: public unicast
// only, plus loopback when the local push service is allowed.
func dialable(addr netip.Addr, allowLoopback bool) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() {
		return allowLoopback
	}
	if !addr.IsGlobalUnicast() || addr.IsPrivate() || addr.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// nonPublic are global-unicast-looking ranges that are not the public
// Internet, or that embed an IPv4 address a gateway would translate.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // carrier-grade NAT
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // reserved
		"64:ff9b::/96",    // NAT64
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard
		"2001::/32",       // Teredo
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4
		"fec0::/10",       // site-local (deprecated)
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// errNonPublicAddress is what the dialer's Control returns.
var errNonPublicAddress = errors.New("resolves to a non-public address")

// dialControl refuses, after name resolution and before connecting, any
// address that is not public: a push service name that resolves to an
// internal address (DNS rebinding) is never connected to.
func dialControl(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !dialable(ap.Addr(), allowLoopback) {
			return errNonPublicAddress
		}
		return nil
	}
}

// newClient is the Sender's default HTTP client: no proxy (the dialer checks
// the push service's own address), no redirects (a redirected POST would
// silently turn into a GET, and could be sent anywhere), and a dialer that
// connects to public addresses only.
func newClient(allowLoopback bool) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: dialControl(allowLoopback)}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Timeout:       30 * time.Second,
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// KeyFunc returns the key a request is limited under: a client's address, an API key, a user.
// It returns ErrNoKey (or any error) when the request has none; the middleware then answers
// with Options.NoKey.
type KeyFunc func(r *http.Request) (string, error)

// ErrNoKey: the request carries nothing to limit it by.
var ErrNoKey = errors.New("httplimit: the request has no rate-limit key")

// RemoteIP keys requests by the client's IP address. Without trusted proxies it is the address
// of the TCP peer (r.RemoteAddr), and X-Forwarded-For is ignored: a client can write anything
// there. When the peer is one of trustedProxies (your load balancers, as prefixes such as
// netip.MustParsePrefix("10.0.0.0/8")), X-Forwarded-For is read from the right, each proxy
// having appended the address it saw, skipping trusted proxies: the first address that is not a
// trusted proxy's is the client. An unparsable entry where a trusted proxy's should be is
// ErrNoKey. IPv4-mapped IPv6 addresses are keyed as IPv4.
func RemoteIP(trustedProxies ...netip.Prefix) KeyFunc {
	trusted := func(a netip.Addr) bool {
		for _, p := range trustedProxies {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) (string, error) {
		addr, ok := parseHost(r.RemoteAddr)
		if !ok {
			return "", fmt.Errorf("%w: remote address %q", ErrNoKey, r.RemoteAddr)
		}
		if len(trustedProxies) == 0 || !trusted(addr) {
			return addr.String(), nil
		}
		client, err := forwardedClient(r.Header.Values("X-Forwarded-For"), addr, trusted)
		if err != nil {
			return "", err
		}
		return client.String(), nil
	}
}

// forwardedClient walks X-Forwarded-For (every header line, in order, entries separated by
// commas) from the right: peer is the trusted proxy that sent the request.
func forwardedClient(lines []string, peer netip.Addr, trusted func(netip.Addr) bool) (netip.Addr, error) {
	client := peer
	for i := len(lines) - 1; i >= 0; i-- {
		hops := lines[i]
		for hops != "" {
			var hop string
			if j := strings.LastIndexByte(hops, ','); j >= 0 {
				hops, hop = hops[:j], hops[j+1:]
			} else {
				hops, hop = "", hops
			}
			hop = strings.TrimSpace(hop)
			if hop == "" {
				continue
			}
			a, ok := parseHost(hop)
			if !ok {
				return netip.Addr{}, fmt.Errorf("%w: X-Forwarded-For entry %q", ErrNoKey, hop)
			}
			if !trusted(a) {
				return a, nil
			}
			client = a
		}
	}
	return client, nil // every hop is a trusted proxy: the leftmost one
}

// parseHost reads an address with or without a port ("10.0.0.1", "10.0.0.1:443", "[::1]:80",
// "::1"), without its zone, IPv4-mapped addresses as IPv4.
func parseHost(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// Header keys requests by a header's value, such as an API key ("X-API-Key"); a request without
// it has no key.
func Header(name string) KeyFunc {
	return func(r *http.Request) (string, error) {
		if v := r.Header.Get(name); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("%w: no %s header", ErrNoKey, name)
	}
}

type userKey struct{}

// WithUser returns ctx carrying the authenticated user, for User. An authentication middleware
// that runs before the limiter calls it: r = r.WithContext(httplimit.WithUser(r.Context(), id)).
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// User keys requests by the authenticated user that WithUser put in the request's context; a
// request without one has no key.
func User(r *http.Request) (string, error) {
	if u, _ := r.Context().Value(userKey{}).(string); u != "" {
		return u, nil
	}
	return "", fmt.Errorf("%w: no authenticated user", ErrNoKey)
}

// ContextValue keys requests by a value another middleware put in the request's context under
// key: a string, or a fmt.Stringer.
func ContextValue(key any) KeyFunc {
	return func(r *http.Request) (string, error) {
		switch v := r.Context().Value(key).(type) {
		case string:
			if v != "" {
				return v, nil
			}
		case fmt.Stringer:
			if s := v.String(); s != "" {
				return s, nil
			}
		}
		return "", fmt.Errorf("%w: nothing in the context under %v", ErrNoKey, key)
	}
}

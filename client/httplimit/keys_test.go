package httplimit

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func request(remote string, xff ...string) *http.Request {
	r, _ := http.NewRequest("GET", "http://example.test/", nil)
	r.RemoteAddr = remote
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	return r
}

var proxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}

func TestRemoteIPTrustsForwardedForOnlyFromTrustedProxies(t *testing.T) {
	cases := []struct {
		name    string
		trusted []netip.Prefix
		r       *http.Request
		want    string
	}{
		{"no proxies: the peer, whatever the header says", nil, request("203.0.113.7:5123", "1.2.3.4"), "203.0.113.7"},
		{"an untrusted peer's header is ignored", proxies, request("203.0.113.7:5123", "1.2.3.4"), "203.0.113.7"},
		{"a trusted proxy's last entry is the client", proxies, request("10.0.0.2:80", "198.51.100.9"), "198.51.100.9"},
		{"entries a client wrote left of it are skipped", proxies, request("10.0.0.2:80", "6.6.6.6, 198.51.100.9"), "198.51.100.9"},
		{"a chain of trusted proxies", proxies, request("10.0.0.2:80", "6.6.6.6, 198.51.100.9, 10.1.1.1, 10.2.2.2"), "198.51.100.9"},
		{"several header lines, in order", proxies, request("10.0.0.2:80", "6.6.6.6", "198.51.100.9, 10.1.1.1"), "198.51.100.9"},
		{"only proxies: the leftmost", proxies, request("10.0.0.2:80", "10.9.9.9, 10.1.1.1"), "10.9.9.9"},
		{"no header from a trusted proxy: the proxy", proxies, request("10.0.0.2:80"), "10.0.0.2"},
		{"IPv6 with a port and a zone", proxies, request("[fd00::1%eth0]:443", "[2001:db8::5]:1234"), "2001:db8::5"},
		{"IPv4-mapped IPv6 keys as IPv4", nil, request("[::ffff:192.0.2.1]:80"), "192.0.2.1"},
		{"empty entries are skipped", proxies, request("10.0.0.2:80", "198.51.100.9,, ,"), "198.51.100.9"},
	}
	for _, tc := range cases {
		got, err := RemoteIP(tc.trusted...)(tc.r)
		if err != nil || got != tc.want {
			t.Errorf("%s: RemoteIP = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, r := range []*http.Request{request("not-an-address"), request("10.0.0.2:80", "198.51.100.9, garbage")} {
		if got, err := RemoteIP(proxies...)(r); !errors.Is(err, ErrNoKey) {
			t.Errorf("RemoteIP(%q, %q) = %q, %v; want ErrNoKey", r.RemoteAddr, r.Header.Values("X-Forwarded-For"), got, err)
		}
	}
}

func TestHeaderUserAndContextKeys(t *testing.T) {
	r := request("192.0.2.1:1")
	if _, err := Header("X-API-Key")(r); !errors.Is(err, ErrNoKey) {
		t.Errorf("Header without the header: %v", err)
	}
	r.Header.Set("X-API-Key", "k-123")
	if k, err := Header("X-API-Key")(r); k != "k-123" || err != nil {
		t.Errorf("Header = %q, %v", k, err)
	}
	if _, err := User(r); !errors.Is(err, ErrNoKey) {
		t.Errorf("User without a user: %v", err)
	}
	if k, err := User(r.WithContext(WithUser(r.Context(), "alice"))); k != "alice" || err != nil {
		t.Errorf("User = %q, %v", k, err)
	}
	type tenantKey struct{}
	if k, err := ContextValue(tenantKey{})(r.WithContext(WithUser(r.Context(), "x"))); err == nil {
		t.Errorf("ContextValue of a missing key = %q", k)
	}
}

// FuzzForwardedFor: any header from a trusted proxy gives an error or an address that is the
// peer or one of the header's entries, never a panic.
func FuzzForwardedFor(f *testing.F) {
	f.Add("10.0.0.2:80", "6.6.6.6, 198.51.100.9, 10.1.1.1")
	f.Add("[fd00::1]:443", "[2001:db8::5]:1234,, garbage")
	f.Add("10.0.0.2:80", ",,,")
	f.Fuzz(func(t *testing.T, remote, xff string) {
		r := request(remote, xff)
		got, err := RemoteIP(proxies...)(r)
		if err != nil {
			return
		}
		a, ok := parseHost(got)
		if !ok {
			t.Fatalf("RemoteIP = %q: not an address", got)
		}
		if peer, _ := parseHost(remote); a == peer {
			return
		}
		for _, hop := range strings.Split(xff, ",") {
			if h, ok := parseHost(strings.TrimSpace(hop)); ok && h == a {
				return
			}
		}
		t.Fatalf("RemoteIP(%q, %q) = %q: neither the peer nor an entry", remote, xff, got)
	})
}

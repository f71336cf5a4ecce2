package certs

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// Options are Redis's TLS directives, with their redis.conf meaning.
type Options struct {
	// CertFile and KeyFile (tls-cert-file, tls-key-file): the PEM
	// certificate chain and private key this process presents, as a server
	// and, unless ClientCertFile is set, as a client.
	CertFile, KeyFile string
	// ClientCertFile and ClientKeyFile (tls-client-cert-file,
	// tls-client-key-file): a separate pair for outgoing connections, for
	// certificates issued for one role only. Optional.
	ClientCertFile, ClientKeyFile string
	// CAFile (tls-ca-cert-file): the PEM bundle of CA certificates that
	// peers' and clients' certificates must chain to. The system roots are
	// never used, as in Redis.
	CAFile string
	// AuthClients (tls-auth-clients): "yes" (the default, also ""): a client
	// must present a certificate from CAFile; "optional": one is checked if
	// presented; "no": none is asked for. It applies to ServerConfig only:
	// PeerServerConfig always requires one.
	AuthClients string
	// Protocols (tls-protocols): the enabled versions among TLSv1, TLSv1.1,
	// TLSv1.2, TLSv1.3, separated by blanks, case-insensitive; "" is
	// "TLSv1.2 TLSv1.3", as in Redis. crypto/tls takes a range, so the list
	// must not have holes.
	Protocols string
	// Ciphers (tls-ciphers): OpenSSL's cipher list syntax for TLS 1.2 and
	// below (ciphers.go); "" keeps crypto/tls's defaults.
	Ciphers string
	// Ciphersuites (tls-ciphersuites): TLS 1.3 suites, colon-separated.
	// crypto/tls cannot restrict them, so the list must name all three it
	// implements; "" is the same.
	Ciphersuites string
}

// params are the parts of Options that do not change on reload.
type params struct {
	minVersion, maxVersion uint16
	suites                 []uint16 // nil: crypto/tls's defaults
	clientAuth             tls.ClientAuthType
}

func (o *Options) params() (params, error) {
	var p params
	var err error
	if p.minVersion, p.maxVersion, err = ParseProtocols(o.Protocols); err != nil {
		return p, err
	}
	if p.suites, err = ParseCiphers(o.Ciphers); err != nil {
		return p, err
	}
	if err := CheckCiphersuites(o.Ciphersuites); err != nil {
		return p, err
	}
	if p.clientAuth, err = ParseAuthClients(o.AuthClients); err != nil {
		return p, err
	}
	if p.suites != nil && p.maxVersion < tls.VersionTLS13 && !hasSuiteFor(p.suites, p.maxVersion) {
		return p, fmt.Errorf("%w: none of its ciphers works with the versions tls-protocols enables", ErrBadCiphers)
	}
	return p, nil
}

var protocolNames = []struct {
	name    string
	version uint16
}{{"tlsv1", tls.VersionTLS10}, {"tlsv1.1", tls.VersionTLS11}, {"tlsv1.2", tls.VersionTLS12}, {"tlsv1.3", tls.VersionTLS13}}

// ParseProtocols reads tls-protocols into the range of versions it enables.
func ParseProtocols(s string) (minVersion, maxVersion uint16, err error) {
	if strings.TrimSpace(s) == "" {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	var on [4]bool
	for _, w := range strings.Fields(s) {
		found := false
		for i, p := range protocolNames {
			if strings.EqualFold(w, p.name) {
				on[i], found = true, true
			}
		}
		if !found {
			return 0, 0, fmt.Errorf("%w: unknown protocol %q (use TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", ErrBadProtocols, clip(w))
		}
	}
	lo, hi := -1, -1
	for i, v := range on {
		if v {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	for i := lo; i <= hi; i++ {
		if !on[i] {
			return 0, 0, fmt.Errorf("%w: %q leaves out %s between the versions it names; crypto/tls enables a range of versions",
				ErrBadProtocols, clip(s), protocolNames[i].name)
		}
	}
	return protocolNames[lo].version, protocolNames[hi].version, nil
}

// ParseAuthClients reads tls-auth-clients.
func ParseAuthClients(s string) (tls.ClientAuthType, error) {
	switch strings.ToLower(s) {
	case "", "yes":
		return tls.RequireAndVerifyClientCert, nil
	case "optional":
		return tls.VerifyClientCertIfGiven, nil
	case "no":
		return tls.NoClientCert, nil
	}
	return 0, fmt.Errorf("%w: %q (use yes, no or optional)", ErrBadAuthClients, clip(s))
}

// tls13Suites are the TLS 1.3 suites crypto/tls implements, always enabled.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// CheckCiphersuites validates tls-ciphersuites, a colon-separated list of
// TLS 1.3 suites. crypto/tls enables its three TLS 1.3 suites whatever the
// configuration says, so a list that leaves one out is refused rather than
// silently not honoured; the suites OpenSSL has and crypto/tls lacks (the
// CCM ones) are refused too.
func CheckCiphersuites(s string) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	listed := map[string]bool{}
	for _, w := range strings.Split(s, ":") {
		w = strings.TrimSpace(w)
		known := false
		for _, n := range tls13Suites {
			if strings.EqualFold(w, n) {
				listed[n], known = true, true
			}
		}
		if !known {
			return fmt.Errorf("%w: %q is not a TLS 1.3 suite crypto/tls implements (%s)",
				ErrBadSuites, clip(w), strings.Join(tls13Suites, ", "))
		}
	}
	for _, n := range tls13Suites {
		if !listed[n] {
			return fmt.Errorf("%w: crypto/tls always enables %s with TLS 1.3 and cannot leave out %s: "+
				"list all three, omit tls-ciphersuites, or leave TLSv1.3 out of tls-protocols",
				ErrBadSuites, strings.Join(tls13Suites, ", "), n)
		}
	}
	return nil
}

// clip shortens a word quoted in an error to one short line.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

package certs

import (
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseProtocols(t *testing.T) {
	for _, tc := range []struct {
		in       string
		min, max uint16
		err      string
	}{
		{"", tls.VersionTLS12, tls.VersionTLS13, ""},
		{"TLSv1.2 TLSv1.3", tls.VersionTLS12, tls.VersionTLS13, ""},
		{"tlsv1.3", tls.VersionTLS13, tls.VersionTLS13, ""},
		{"TLSv1.2", tls.VersionTLS12, tls.VersionTLS12, ""},
		{"TLSv1 TLSv1.1 TLSv1.2", tls.VersionTLS10, tls.VersionTLS12, ""},
		{"  TLSv1.3   TLSv1.2 ", tls.VersionTLS12, tls.VersionTLS13, ""},
		{"TLSv1.2 TLSv1.2", tls.VersionTLS12, tls.VersionTLS12, ""},
		{"TLSv1 TLSv1.3", 0, 0, `leaves out tlsv1.1`},
		{"TLSv1.4", 0, 0, `unknown protocol "TLSv1.4"`},
		{"SSLv3", 0, 0, `unknown protocol "SSLv3"`},
	} {
		lo, hi, err := ParseProtocols(tc.in)
		if tc.err != "" {
			if !errors.Is(err, ErrBadProtocols) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseProtocols(%q) error %v; want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || lo != tc.min || hi != tc.max {
			t.Errorf("ParseProtocols(%q) = %x, %x, %v; want %x, %x", tc.in, lo, hi, err, tc.min, tc.max)
		}
	}
}

func TestParseAuthClients(t *testing.T) {
	for in, want := range map[string]tls.ClientAuthType{"": tls.RequireAndVerifyClientCert, "yes": tls.RequireAndVerifyClientCert,
		"YES": tls.RequireAndVerifyClientCert, "optional": tls.VerifyClientCertIfGiven, "no": tls.NoClientCert} {
		if got, err := ParseAuthClients(in); err != nil || got != want {
			t.Errorf("ParseAuthClients(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseAuthClients("maybe"); !errors.Is(err, ErrBadAuthClients) {
		t.Errorf("ParseAuthClients(maybe) = %v", err)
	}
}

func TestCheckCiphersuites(t *testing.T) {
	for _, ok := range []string{"", "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256",
		"TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256"} {
		if err := CheckCiphersuites(ok); err != nil {
			t.Errorf("CheckCiphersuites(%q) = %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		"TLS_CHACHA20_POLY1305_SHA256": "cannot leave out TLS_AES_128_GCM_SHA256",
		"TLS_AES_128_CCM_SHA256":       `"TLS_AES_128_CCM_SHA256" is not a TLS 1.3 suite crypto/tls implements`,
		"ECDHE-RSA-AES128-GCM-SHA256":  "is not a TLS 1.3 suite",
	} {
		if err := CheckCiphersuites(in); !errors.Is(err, ErrBadSuites) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckCiphersuites(%q) = %v; want one containing %q", in, err, want)
		}
	}
}

func names(ids []uint16) []string {
	var out []string
	for _, id := range ids {
		for _, s := range suites {
			if s.id == id {
				out = append(out, s.openssl)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestParseCiphers(t *testing.T) {
	allNames := names(func() []uint16 {
		var ids []uint16
		for _, s := range suites {
			ids = append(ids, s.id)
		}
		return ids
	}())
	for _, tc := range []struct {
		in   string
		want []string // sorted OpenSSL names; nil: crypto/tls's defaults
	}{
		{"", nil},
		{"DEFAULT:!MEDIUM", allNames},
		{"HIGH:!aNULL:!MD5", allNames},
		{"ECDHE-RSA-AES128-GCM-SHA256", []string{"ECDHE-RSA-AES128-GCM-SHA256"}},
		{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", []string{"ECDHE-RSA-AES128-GCM-SHA256"}},
		{"ECDHE+AESGCM", []string{"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"}},
		{"ECDH+AESGCM:ECDH+CHACHA20:!aNULL", []string{"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
			"ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"}},
		{"aECDSA+AES256:!SHA1", []string{"ECDHE-ECDSA-AES256-GCM-SHA384"}},
		{"ALL:-SHA1:!aRSA:SHA1", []string{"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-GCM-SHA384",
			"ECDHE-ECDSA-AES256-SHA", "ECDHE-ECDSA-CHACHA20-POLY1305"}},
		{"HIGH,+SHA1 @STRENGTH", allNames},
		{"TLSv1.0", []string{"ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA"}},
	} {
		ids, err := ParseCiphers(tc.in)
		if err != nil {
			t.Errorf("ParseCiphers(%q): %v", tc.in, err)
			continue
		}
		if tc.want == nil {
			if ids != nil {
				t.Errorf("ParseCiphers(%q) = %v; want nil", tc.in, names(ids))
			}
			continue
		}
		if got := names(ids); !slices.Equal(got, tc.want) {
			t.Errorf("ParseCiphers(%q) = %v; want %v", tc.in, got, tc.want)
		}
	}
	for in, want := range map[string]string{
		"DHE-RSA-AES128-GCM-SHA256": `"DHE-RSA-AES128-GCM-SHA256" is neither`,
		"ALL:!ALL":                  "selects no cipher",
		"MEDIUM":                    "selects no cipher",
		"HIGH:@FOO":                 `unknown directive "@FOO"`,
		"ECDHE+NOPE":                `"NOPE" is neither`,
	} {
		if _, err := ParseCiphers(in); !errors.Is(err, ErrBadCiphers) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCiphers(%q) = %v; want one containing %q", in, err, want)
		}
	}
}

// The options take effect on real handshakes.
func TestProtocolsAndCiphersAreEnforced(t *testing.T) {
	ca := newCA(t, "group CA")
	o := newNode(t, ca, ca).opts()
	o.Protocols = "TLSv1.3"
	addr := echoServer(t, mustNew(t, o).PeerServerConfig())
	cli := mustNew(t, newNode(t, ca, ca).opts()).ClientConfig()
	cli.MaxVersion = tls.VersionTLS12
	if _, err := dial(addr, cli); err == nil {
		t.Fatal("a TLS 1.2 client reached a server with tls-protocols TLSv1.3")
	}

	o = newNode(t, ca, ca).opts()
	o.Protocols, o.Ciphers = "TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384"
	addr = echoServer(t, mustNew(t, o).PeerServerConfig())
	cn, err := dial(addr, mustNew(t, newNode(t, ca, ca).opts()).ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.c.Close()
	if st := cn.c.ConnectionState(); st.Version != tls.VersionTLS12 || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
		t.Fatalf("negotiated %s %s; want TLS 1.2 ECDHE-ECDSA-AES256-GCM-SHA384", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
	}
	only := mustNew(t, newNode(t, ca, ca).opts()).ClientConfig()
	only.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
	if _, err := dial(addr, only); err == nil {
		t.Fatal("a client offering only a cipher tls-ciphers leaves out was served")
	}

	o.Protocols, o.Ciphers = "TLSv1 TLSv1.1", "ECDHE+AESGCM"
	if _, err := New(o); !errors.Is(err, ErrBadCiphers) {
		t.Fatalf("TLS 1.0–1.1 with GCM ciphers only: %v; want ErrBadCiphers", err)
	}
}

func FuzzParseCiphers(f *testing.F) {
	for _, s := range []string{"", "DEFAULT:!MEDIUM", "ECDH+AESGCM:ECDH+CHACHA20:!aNULL", "ALL:-SHA1:!aRSA:SHA1", "+x:-:!", "@SECLEVEL=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := ParseCiphers(s)
		if err != nil {
			if !errors.Is(err, ErrBadCiphers) {
				t.Fatalf("ParseCiphers(%q): error %v outside the vocabulary", s, err)
			}
			return
		}
		seen := map[uint16]bool{}
		for _, id := range ids {
			if seen[id] || tls.CipherSuiteName(id) == "" {
				t.Fatalf("ParseCiphers(%q) = %v: duplicate or unknown suite", s, ids)
			}
			seen[id] = true
		}
	})
}

func FuzzParseProtocols(f *testing.F) {
	for _, s := range []string{"", "TLSv1.2 TLSv1.3", "TLSv1 TLSv1.3", "tlsv1.1\ttlsv1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lo, hi, err := ParseProtocols(s)
		if err != nil {
			if !errors.Is(err, ErrBadProtocols) {
				t.Fatalf("ParseProtocols(%q): error %v outside the vocabulary", s, err)
			}
			return
		}
		if lo > hi || lo < tls.VersionTLS10 || hi > tls.VersionTLS13 {
			t.Fatalf("ParseProtocols(%q) = %x, %x", s, lo, hi)
		}
		if err := CheckCiphersuites(s); err != nil && !errors.Is(err, ErrBadSuites) {
			t.Fatalf("CheckCiphersuites(%q): error %v outside the vocabulary", s, err)
		}
	})
}

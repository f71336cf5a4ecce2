package certs

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// tls-ciphers in OpenSSL's cipher list syntax (ciphers(1ssl)), for the
// TLS 1.0–1.2 suites crypto/tls implements and considers secure. A list is
// words separated by ':', ',' or blanks, read left to right:
//
//	NAME        adds the suites NAME selects (a suite's OpenSSL or IANA name,
//	            or a class: HIGH, DEFAULT, ALL, ECDHE, aRSA, aECDSA, AESGCM,
//	            CHACHA20, AES128, AES256, SHA1, SHA256, SHA384, TLSv1.2 …)
//	A+B         the suites both A and B select
//	-NAME       removes them (a later word may add them again)
//	!NAME       removes them for good
//	+NAME       moves them to the end (crypto/tls ignores the order)
//	@STRENGTH, @SECLEVEL=n   accepted and ignored
//
// Classes of suites crypto/tls does not implement (MEDIUM, LOW, aNULL,
// eNULL, EXPORT, RC4, MD5, 3DES, DES, PSK, SRP, DSS, DHE, CAMELLIA …) select
// nothing, so "DEFAULT:!MEDIUM" and "HIGH:!aNULL:!MD5" work as written. A
// word that is neither a class nor a suite crypto/tls implements is an error
// that names it, and so is a list that selects nothing.

// suite is one TLS 1.0–1.2 suite crypto/tls offers, with the properties
// OpenSSL's classes select by.
type suite struct {
	id      uint16
	openssl string
	auth    string // "RSA" or "ECDSA"; the key exchange is always ECDHE
	cipher  string // "AES128", "AES256" or "CHACHA20"
	mode    string // "GCM", "CBC" or "POLY1305"
	mac     string // "SHA1", "SHA256" or "SHA384"
	tls12   bool   // TLS 1.2 only
}

var suites = []suite{
	{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, "ECDHE-ECDSA-AES128-SHA", "ECDSA", "AES128", "CBC", "SHA1", false},
	{tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, "ECDHE-ECDSA-AES256-SHA", "ECDSA", "AES256", "CBC", "SHA1", false},
	{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, "ECDHE-RSA-AES128-SHA", "RSA", "AES128", "CBC", "SHA1", false},
	{tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, "ECDHE-RSA-AES256-SHA", "RSA", "AES256", "CBC", "SHA1", false},
	{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDSA", "AES128", "GCM", "SHA256", true},
	{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDSA", "AES256", "GCM", "SHA384", true},
	{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, "ECDHE-RSA-AES128-GCM-SHA256", "RSA", "AES128", "GCM", "SHA256", true},
	{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "ECDHE-RSA-AES256-GCM-SHA384", "RSA", "AES256", "GCM", "SHA384", true},
	{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, "ECDHE-RSA-CHACHA20-POLY1305", "RSA", "CHACHA20", "POLY1305", "SHA256", true},
	{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDSA", "CHACHA20", "POLY1305", "SHA256", true},
}

// classes are OpenSSL's cipher classes, as predicates on a suite.
var classes = map[string]func(s *suite) bool{
	"ALL": all, "DEFAULT": all, "HIGH": all,
	"ECDHE": all, "EECDH": all, "kECDHE": all, "kEECDH": all, "ECDH": all, "kECDH": none,
	"RSA": isAuth("RSA"), "aRSA": isAuth("RSA"), "kRSA": none,
	"ECDSA": isAuth("ECDSA"), "aECDSA": isAuth("ECDSA"),
	"AES":      func(s *suite) bool { return s.cipher == "AES128" || s.cipher == "AES256" },
	"AES128":   func(s *suite) bool { return s.cipher == "AES128" },
	"AES256":   func(s *suite) bool { return s.cipher == "AES256" },
	"AESGCM":   func(s *suite) bool { return s.mode == "GCM" },
	"CHACHA20": func(s *suite) bool { return s.cipher == "CHACHA20" },
	"SHA1":     func(s *suite) bool { return s.mac == "SHA1" },
	"SHA":      func(s *suite) bool { return s.mac == "SHA1" },
	"SHA256":   func(s *suite) bool { return s.mac == "SHA256" },
	"SHA384":   func(s *suite) bool { return s.mac == "SHA384" },
	"TLSv1.2":  func(s *suite) bool { return s.tls12 },
	"TLSv1.0":  func(s *suite) bool { return !s.tls12 },
	"TLSv1":    func(s *suite) bool { return !s.tls12 },
	"SSLv3":    func(s *suite) bool { return !s.tls12 },
}

// noneClasses select suites crypto/tls does not implement.
var noneClasses = []string{"COMPLEMENTOFDEFAULT", "COMPLEMENTOFALL", "MEDIUM", "LOW", "EXPORT", "EXP",
	"aNULL", "eNULL", "NULL", "ADH", "AECDH", "RC4", "MD5", "DES", "3DES", "IDEA", "SEED",
	"CAMELLIA", "CAMELLIA128", "CAMELLIA256", "ARIA", "ARIA128", "ARIA256", "ARIAGCM",
	"CCM", "CCM8", "AESCCM", "AESCCM8", "PSK", "kPSK", "aPSK", "kECDHEPSK", "kDHEPSK", "kRSAPSK",
	"SRP", "kSRP", "aSRP", "DSS", "aDSS", "DH", "kDH", "kDHE", "kEDH", "DHE", "EDH",
	"GOST94", "GOST89MAC", "aGOST", "aGOST01", "kGOST", "GOST2012", "kDHr", "kDHd", "aDH", "aECDH", "kECDHr", "kECDHe"}

func init() {
	for _, c := range noneClasses {
		classes[c] = none
	}
}

func all(*suite) bool  { return true }
func none(*suite) bool { return false }

func isAuth(a string) func(*suite) bool { return func(s *suite) bool { return s.auth == a } }

// selector returns the predicate of one term: a class or a suite's name.
func selector(term string) (func(*suite) bool, bool) {
	if f, ok := classes[term]; ok {
		return f, true
	}
	for i := range suites {
		s := &suites[i]
		if strings.EqualFold(term, s.openssl) || strings.EqualFold(term, tls.CipherSuiteName(s.id)) {
			id := s.id
			return func(x *suite) bool { return x.id == id }, true
		}
	}
	return nil, false
}

// ParseCiphers reads tls-ciphers into the suites it enables; "" returns nil
// (crypto/tls's defaults).
func ParseCiphers(list string) ([]uint16, error) {
	words := strings.FieldsFunc(list, func(r rune) bool { return r == ':' || r == ',' || r == ' ' || r == '\t' })
	if len(words) == 0 {
		return nil, nil
	}
	var order []int // indexes into suites
	banned := make([]bool, len(suites))
	in := make([]bool, len(suites))
	for _, w := range words {
		if strings.HasPrefix(w, "@") {
			if w == "@STRENGTH" || strings.HasPrefix(w, "@SECLEVEL=") {
				continue
			}
			return nil, fmt.Errorf("%w: unknown directive %q", ErrBadCiphers, clip(w))
		}
		op := byte(0)
		if w[0] == '!' || w[0] == '-' || w[0] == '+' {
			op, w = w[0], w[1:]
		}
		var preds []func(*suite) bool
		for _, term := range strings.Split(w, "+") {
			f, ok := selector(term)
			if !ok {
				return nil, fmt.Errorf("%w: %q is neither an OpenSSL cipher class nor a cipher crypto/tls implements (%s)",
					ErrBadCiphers, clip(term), supportedNames())
			}
			preds = append(preds, f)
		}
		match := func(i int) bool {
			for _, f := range preds {
				if !f(&suites[i]) {
					return false
				}
			}
			return true
		}
		switch op {
		case 0:
			for i := range suites {
				if match(i) && !banned[i] && !in[i] {
					in[i] = true
					order = append(order, i)
				}
			}
		case '-', '!', '+':
			kept := order[:0:0]
			var moved []int
			for _, i := range order {
				switch {
				case !match(i):
					kept = append(kept, i)
				case op == '+':
					moved = append(moved, i)
				default:
					in[i] = false
				}
			}
			order = append(kept, moved...)
			if op == '!' {
				for i := range suites {
					if match(i) {
						banned[i] = true
					}
				}
			}
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%w: %q selects no cipher crypto/tls implements (%s)", ErrBadCiphers, clip(list), supportedNames())
	}
	ids := make([]uint16, len(order))
	for j, i := range order {
		ids[j] = suites[i].id
	}
	return ids, nil
}

func supportedNames() string {
	names := make([]string, len(suites))
	for i, s := range suites {
		names[i] = s.openssl
	}
	return strings.Join(names, ", ")
}

// hasSuiteFor reports whether one of ids works with a version up to hi
// (below TLS 1.3, whose suites are always there).
func hasSuiteFor(ids []uint16, hi uint16) bool {
	for _, id := range ids {
		for _, s := range suites {
			if s.id == id && (hi >= tls.VersionTLS12 || !s.tls12) {
				return true
			}
		}
	}
	return false
}

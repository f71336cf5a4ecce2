// Package certstest makes throwaway certificate authorities and
// certificates for tests, with crypto/x509 at run time, so that no key is
// ever committed.
package certstest

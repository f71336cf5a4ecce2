package certs

import (
	"errors"
	"fmt"
)

// The error vocabulary. Every error about a file wraps one of these with the
// option's name and the file's path ("tls-cert-file /etc/tls/tls.crt: …"), so
// that errors.Is works and the operator knows which file to fix.
var (
	ErrNoCertificate  = errors.New("no PEM certificate found")
	ErrNoKey          = errors.New("no PEM private key found")
	ErrEncryptedKey   = errors.New("the private key is encrypted (tls-key-file-pass is not supported): store it decrypted, readable by sluice only")
	ErrKeyMismatch    = errors.New("the private key does not match the certificate")
	ErrBadPEM         = errors.New("cannot parse")
	ErrNoCA           = errors.New("no PEM CA certificate found")
	ErrMissingFile    = errors.New("is required")
	ErrBadProtocols   = errors.New("invalid tls-protocols")
	ErrBadCiphers     = errors.New("invalid tls-ciphers")
	ErrBadSuites      = errors.New("invalid tls-ciphersuites")
	ErrBadAuthClients = errors.New("invalid tls-auth-clients")
	ErrWatching       = errors.New("the certificate watcher is already running")
	ErrUnverified     = errors.New("the peer presented no certificate")
)

// fileError names the option and the file an error is about.
func fileError(option, path string, err error) error {
	return fmt.Errorf("%s %s: %w", option, path, err)
}

package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
)

// Reading PEM files, with errors that name the option and the file.

// parsePair reads a certificate chain and its private key. certFile and
// keyFile are {option, path}.
func parsePair(certFile, keyFile [2]string, certPEM, keyPEM []byte) (*tls.Certificate, error) {
	n := 0
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		n++
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return nil, fileError(certFile[0], certFile[1], fmt.Errorf("%w certificate %d: %v", ErrBadPEM, n, err))
		}
	}
	if n == 0 {
		return nil, fileError(certFile[0], certFile[1], ErrNoCertificate)
	}
	if err := checkKey(keyPEM); err != nil {
		return nil, fileError(keyFile[0], keyFile[1], err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		if strings.Contains(err.Error(), "does not match") {
			return nil, fmt.Errorf("%s %s and %s %s: %w", certFile[0], certFile[1], keyFile[0], keyFile[1], ErrKeyMismatch)
		}
		return nil, fileError(keyFile[0], keyFile[1], fmt.Errorf("%w: %v", ErrBadPEM, err))
	}
	return &pair, nil
}

// checkKey finds the private key block and refuses an encrypted one with
// a message that says so (tls.X509KeyPair would only say it cannot parse it).
func checkKey(keyPEM []byte) error {
	for rest := keyPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return ErrNoKey
		}
		if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(b.Headers["Proc-Type"], "ENCRYPTED") {
			return ErrEncryptedKey
		}
		return nil
	}
}

// parseCA reads a bundle of CA certificates. file is {option, path}.
func parseCA(file [2]string, caPEM []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := caPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		n++
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fileError(file[0], file[1], fmt.Errorf("%w certificate %d: %v", ErrBadPEM, n, err))
		}
		pool.AddCert(c)
	}
	if n == 0 {
		return nil, fileError(file[0], file[1], ErrNoCA)
	}
	return pool, nil
}

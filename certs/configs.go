package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// The tls.Configs a Reloader hands out. Each reads the material in force at
// every handshake, so one Config serves for the life of a listener or a
// dialer, across reloads.

// ServerConfig is for a listener that clients connect to: it presents the
// certificate and asks clients for theirs as tls-auth-clients says.
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: r.p.minVersion,
		MaxVersion: r.p.maxVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.cur.Load().server, nil
		},
	}
}

// PeerServerConfig is for a listener that only peers connect to (the Raft
// port): it requires a certificate from the CA bundle whatever
// tls-auth-clients says, and resumes no sessions.
func (r *Reloader) PeerServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: r.p.minVersion,
		MaxVersion: r.p.maxVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.cur.Load().peer, nil
		},
	}
}

// ClientConfig is for connections to peers: it presents the client
// certificate (tls-client-cert-file, or the server's) and accepts a server
// whose certificate chains to the CA bundle in force and is meant for
// servers. Like Redis's replication links it checks no host name: the CA
// bundle is what makes a peer, so give a group a CA of its own.
func (r *Reloader) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   r.p.minVersion,
		MaxVersion:   r.p.maxVersion,
		CipherSuites: r.p.suites,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return r.cur.Load().clientCert, nil
		},
		// The chain is checked by VerifyConnection, against the CA bundle
		// in force at this handshake (RootCAs cannot change after a Config
		// is in use).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return r.verify(cs.PeerCertificates, x509.ExtKeyUsageServerAuth)
		},
	}
}

// verify checks that chain[0] chains to the CA bundle in force (through
// chain[1:]) and is meant for usage.
func (r *Reloader) verify(chain []*x509.Certificate, usage x509.ExtKeyUsage) error {
	if len(chain) == 0 {
		return ErrUnverified
	}
	opts := x509.VerifyOptions{Roots: r.cur.Load().pool, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{usage}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := chain[0].Verify(opts); err != nil {
		return fmt.Errorf("certs: the peer's certificate (subject %q): %w", chain[0].Subject.String(), err)
	}
	return nil
}

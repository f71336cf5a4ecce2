package main

import (
	"errors"
	"log/slog"
	"time"

	"github.com/sluice-rl/sluice/certs"
)

// TLS wiring: the certificates of the Raft port's mutual TLS
// (--tls-replication yes), reloaded on SIGHUP and when the files change.
// Clients connect in plaintext: there is no tls-port yet.

// tlsPollInterval is how often the certificate files are read to see
// whether they changed (their contents are compared, so a Kubernetes
// secret's symlink swap counts).
const tlsPollInterval = 5 * time.Second

// loadTLS loads the certificates when something uses them, and starts the
// poller that reloads them. It returns nil when TLS is off.
func loadTLS(log *slog.Logger, cfg config) (*certs.Reloader, error) {
	if cfg.tlsReplication != "yes" {
		if cfg.tlsCertFile != "" || cfg.tlsKeyFile != "" || cfg.tlsCAFile != "" {
			log.Warn("tls-cert-file, tls-key-file or tls-ca-cert-file is set but nothing uses it: " +
				"tls-replication is no, and clients connect in plaintext (sluice has no tls-port)")
		}
		return nil, nil
	}
	if cfg.nodeID == "" && cfg.raftBind == "" {
		return nil, errors.New("--tls-replication yes secures a replicated group's Raft port: it needs --node-id and --raft-bind")
	}
	r, err := certs.New(certs.Options{
		CertFile: cfg.tlsCertFile, KeyFile: cfg.tlsKeyFile,
		ClientCertFile: cfg.tlsClientCertFile, ClientKeyFile: cfg.tlsClientKeyFile,
		CAFile: cfg.tlsCAFile, Protocols: cfg.tlsProtocols, Ciphers: cfg.tlsCiphers, Ciphersuites: cfg.tlsCiphersuites,
	})
	if err != nil {
		return nil, err
	}
	logCertificate(log, "TLS certificate loaded; the Raft port speaks mutual TLS only", r)
	err = r.Start(tlsPollInterval, func(err error) {
		if err != nil {
			log.Error("TLS files changed but did not load; the certificate in force stays", "err", err)
			return
		}
		logCertificate(log, "TLS certificate reloaded (the files changed)", r)
	})
	return r, err
}

// reloadTLS reloads the certificates on SIGHUP.
func reloadTLS(log *slog.Logger, r *certs.Reloader) {
	if r == nil {
		log.Info("SIGHUP: no TLS certificate to reload")
		return
	}
	changed, err := r.Reload()
	switch {
	case err != nil:
		log.Error("SIGHUP: TLS files did not load; the certificate in force stays", "err", err)
	case changed:
		logCertificate(log, "SIGHUP: TLS certificate reloaded", r)
	default:
		logCertificate(log, "SIGHUP: TLS files unchanged", r)
	}
}

func logCertificate(log *slog.Logger, msg string, r *certs.Reloader) {
	leaf := r.Leaf()
	log.Info(msg, "subject", leaf.Subject.String(), "serial", leaf.SerialNumber.Text(16),
		"not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	if time.Until(leaf.NotAfter) < 7*24*time.Hour {
		log.Warn("the TLS certificate expires within 7 days", "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
}

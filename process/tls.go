package process

import (
	"log/slog"
	"time"

	"github.com/sluice-rl/sluice/certs"
	"github.com/sluice-rl/sluice/cluster"
)

// TLS wiring: the certificates of the clients' TLS port (--tls-port) and
// of the Raft port's mutual TLS (--tls-replication yes), reloaded on SIGHUP
// and when the files change.

// tlsPollInterval is how often the certificate files are read to see
// whether they changed (their contents are compared, so a Kubernetes
// secret's symlink swap counts).
const tlsPollInterval = 5 * time.Second

// loadTLS loads the certificates when something uses them, and starts the
// poller that reloads them. It returns nil when TLS is off.
func loadTLS(log *slog.Logger, cfg Options) (*certs.Reloader, error) {
	if cfg.tlsReplication != "yes" && cfg.tlsPort == 0 {
		if cfg.tlsCertFile != "" || cfg.tlsKeyFile != "" || cfg.tlsCAFile != "" {
			log.Warn("tls-cert-file, tls-key-file or tls-ca-cert-file is set but nothing uses it: " +
				"tls-port is 0 and tls-replication is no")
		}
		return nil, nil
	}
	r, err := certs.New(certs.Options{
		CertFile: cfg.tlsCertFile, KeyFile: cfg.tlsKeyFile,
		ClientCertFile: cfg.tlsClientCertFile, ClientKeyFile: cfg.tlsClientKeyFile,
		CAFile: cfg.tlsCAFile, AuthClients: cfg.tlsAuthClients, Protocols: cfg.tlsProtocols, Ciphers: cfg.tlsCiphers, Ciphersuites: cfg.tlsCiphersuites,
	})
	if err != nil {
		return nil, err
	}
	logCertificate(log, "TLS certificate loaded", r)
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

// clusterTLS sets how a node reaches the other nodes' RESP ports
// (forwarding, RAFT.JOIN, RAFT.MEMBERS): with --tls-replication yes and a
// TLS port, through that port under the same mutual TLS as Raft, as Redis's
// replicas connect to a TLS master; otherwise through the plaintext port,
// which --port 0 closes, so that a group without it must use TLS. It
// returns the port the other nodes are told to reach.
func clusterTLS(cfg Options, tlsr *certs.Reloader, ccfg *cluster.Config) (port int, err error) {
	if cfg.tlsReplication == "yes" {
		ccfg.RaftServerTLS, ccfg.RaftClientTLS = tlsr.PeerServerConfig(), tlsr.ClientConfig()
		if cfg.tlsPort != 0 {
			ccfg.RESPTLS = tlsr.ClientConfig()
			return cfg.tlsPort, nil
		}
	}
	return cfg.port, nil // not 0: Check refuses --port 0 in a group without a TLS port
}

// Package certs builds crypto/tls configurations from Redis's TLS options
// (tls-cert-file, tls-key-file, tls-ca-cert-file, tls-auth-clients,
// tls-protocols, tls-ciphers, tls-ciphersuites) and reloads the certificate
// and the CA bundle on demand or when the files change, without touching the
// connections already open.
package certs

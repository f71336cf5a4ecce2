// Package metrics serves sluice's figures to Prometheus (/metrics) with its liveness and readiness probes (/healthz, /readyz).
package metrics

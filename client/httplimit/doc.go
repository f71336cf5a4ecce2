// Package httplimit is net/http middleware that rate-limits requests with sluice: 429 with
// Retry-After and the IETF RateLimit fields, 403 for refused clients, and an explicit fail-open
// or fail-closed choice with a per-decision timeout and a circuit breaker.
package httplimit

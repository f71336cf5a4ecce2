// Package client is the Go client of sluice: typed decisions, rates, leases, waits and errors over
// a go-redis v9 client the caller already has.
package client

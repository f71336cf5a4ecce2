// Package lease is a keyspace that serves a hot key's decisions from tokens
// taken ahead from an upstream sluice (RL.TAKE) and forwards every other
// request to it over RESP: the lease-backed tier of docs/leases.md.
package lease

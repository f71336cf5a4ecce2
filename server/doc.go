// Package server is sluice's transport: it accepts Redis-protocol clients,
// reads their requests with a bounded reader and runs them through a
// Handler in batches (one clock read and one write per batch), from epoll
// event loops or a goroutine per client.
package server

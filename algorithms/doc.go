// Package algorithms holds the pure rate-limit decisions: each takes a state, the
// current instant, the limit's parameters and a cost, and returns a result and the
// new state, reading no clock and touching no shared memory.
package algorithms

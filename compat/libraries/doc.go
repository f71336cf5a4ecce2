// Package libraries holds no code of its own: its tests run the limiter
// libraries for Redis, unchanged, against a sluice server (and against a
// real Redis where results are compared).
package libraries

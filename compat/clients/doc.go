// Package clients runs real Redis client libraries (ioredis, node-redis,
// redis-py, go-redis) against a real sluice process and asserts what they
// return; it holds tests only.
package clients

// Package compat runs the well-known Redis Lua rate-limit scripts natively: a
// table of their SHA1s and, for each, a pure function that gives the reply and
// the key values Redis 7.0 would give for the same keys, arguments and instant.
package compat

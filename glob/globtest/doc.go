// Package globtest holds glob patterns with Redis 7.0's answers and random
// pattern generators, for the tests of the glob matcher and of SCAN MATCH.
package globtest

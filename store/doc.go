// Package store routes each key to its shard by xxhash and carries out
// decisions and key operations atomically, taking every instant as an argument.
package store

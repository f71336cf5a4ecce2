// Package shard holds one slice of the key space: its entries behind one
// mutex, lazy expiry on access and a bounded incremental sweep.
package shard

//go:build !unix

package shard

// mapWords returns n zeroed words. Without mmap they come from the Go heap,
// still as one pointer-free block, which the collector does not scan.
func mapWords(n int) []uint64 { return make([]uint64, n) }

// unmapWords drops w; the collector frees it.
func unmapWords(w []uint64) {}

//go:build unix

package shard

import (
	"syscall"
	"unsafe"
)

// mapWords returns n zeroed words of anonymous memory mapped outside the Go
// heap: the garbage collector neither scans nor counts it, and the process's
// RSS grows only as its pages are touched.
func mapWords(n int) []uint64 {
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic("shard: mmap of " + itoa(n*8) + " bytes failed: " + err.Error())
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
}

// unmapWords returns memory that mapWords returned to the system. Nothing
// may refer to it afterwards.
func unmapWords(w []uint64) {
	if len(w) == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	if err := syscall.Munmap(b); err != nil {
		panic("shard: munmap failed: " + err.Error())
	}
}

package commands

import (
	"math"
	"runtime/metrics"
	"sort"
)

// What the Go allocator takes for an object, for the footprints that
// maxmemory-clients counts. A small object takes the whole of its size
// class (a 19-byte copy takes 24 bytes, a 49-byte one 64), which for the
// short arguments of a queued command is a few per cent more than their
// lengths; a large one takes whole pages.

// sizeClasses are the allocator's small size classes, ascending, read from
// the running runtime: the boundaries of /gc/heap/allocs-by-size:bytes,
// which are each class's size plus one.
var sizeClasses = func() []int64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs-by-size:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	var out []int64
	for _, b := range s[0].Value.Float64Histogram().Buckets[1:] {
		if !math.IsInf(b, 0) {
			out = append(out, int64(b)-1)
		}
	}
	return out
}()

// allocPage is the unit of a large object's allocation.
const allocPage = 8 << 10

// allocSize returns the bytes an allocation of n bytes takes: its size
// class, or whole pages past the largest class. Without the classes (a
// runtime that does not report them) it rounds to 16 bytes, the smallest
// classes' spacing.
func allocSize(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if len(sizeClasses) == 0 {
		return (n + 15) &^ 15
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		return (n + allocPage - 1) &^ (allocPage - 1)
	}
	return sizeClasses[sort.Search(len(sizeClasses), func(i int) bool { return sizeClasses[i] >= n })]
}

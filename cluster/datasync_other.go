//go:build !linux

package cluster

// dataSyncer returns nil where there is no fdatasync(2): a file's Sync is
// its fsync.
func dataSyncer(any) func() error { return nil }

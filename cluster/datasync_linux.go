package cluster

import (
	"errors"

	"golang.org/x/sys/unix"
)

// dataSyncer returns fdatasync(2) on w's descriptor: it flushes the data
// and the metadata needed to read the data back, not the file's times. It
// returns nil if w has no descriptor.
func dataSyncer(w any) func() error {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return nil
	}
	fd := int(f.Fd())
	return func() error {
		for {
			err := unix.Fdatasync(fd)
			if !errors.Is(err, unix.EINTR) {
				return err
			}
		}
	}
}

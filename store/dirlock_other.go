//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// flock does nothing where the system has no flock: LockDir then keeps no
// second server out of the directory.
func flock(f *os.File) error { return nil }

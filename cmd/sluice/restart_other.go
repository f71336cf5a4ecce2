//go:build !linux

package main

import "time"

// restartForRuntime does nothing where the kernel has no per-thread timer
// slack to set (prctl PR_SET_TIMERSLACK is Linux's): the binary is not
// executed again, and the runtime's monitor thread sleeps as it does by
// default.
func restartForRuntime(time.Duration, bool) error { return nil }

//go:build !linux

package main

import "time"

// applyTimerSlack does nothing where the kernel has no per-thread timer
// slack to set (prctl PR_SET_TIMERSLACK is Linux's).
func applyTimerSlack(time.Duration) error { return nil }

//go:build unix

package testutil

import "syscall"

// ProcessCPU is the process's user and system CPU time so far, in
// nanoseconds; 0 if it cannot be read. A benchmark reports the CPU its
// calls took, the kernel's part included, as the difference of two
// readings.
func ProcessCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

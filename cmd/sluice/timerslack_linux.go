//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// timerSlackEnv marks the image that applyTimerSlack executed, so that a
// kernel that did not keep the slack across execve never makes it loop.
const timerSlackEnv = "SLUICE_TIMER_SLACK_EXEC"

// applyTimerSlack gives every thread of the process the timer slack slack
// (> 0), the margin by which the kernel may delay a thread's timed sleep to
// end it together with others (prctl PR_SET_TIMERSLACK).
//
// A thread takes the slack of the thread that starts it, and the Go
// runtime starts its monitor thread (sysmon) before main runs. That thread
// sleeps 20 µs at a time whenever the process has just come back from
// waiting or a blocking system call, and on a busy CPU every such wake-up
// is a context switch taken from the work. So the slack is set on the
// calling thread and the binary executed again over itself (same process,
// same name, arguments and environment plus timerSlackEnv): the new image's
// first thread keeps the slack, and every thread the runtime starts from
// it inherits it.
//
// It returns, without executing anything, when the process already has
// the slack or is the image it executed; on an error it leaves the slack
// as it was.
func applyTimerSlack(slack time.Duration) error {
	if _, again := os.LookupEnv(timerSlackEnv); again {
		os.Unsetenv(timerSlackEnv)
		return nil
	}
	runtime.LockOSThread() // prctl sets the calling thread's slack, and execve keeps the caller's
	defer runtime.UnlockOSThread()
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("reading the timer slack: %w", err)
	}
	if time.Duration(cur) == slack {
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack.Nanoseconds()), 0, 0, 0); err != nil {
		return fmt.Errorf("setting the timer slack: %w", err)
	}
	exe, err := selfPath()
	if err == nil {
		err = syscall.Exec(exe, os.Args, append(os.Environ(), timerSlackEnv+"=1"))
	}
	unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0)
	return fmt.Errorf("executing the binary again to start with the timer slack: %w", err)
}

// selfPath returns the path to execute this binary by again. The kernel
// names a process (ps, pgrep, top) after the file it executes, so it is
// the path the process was started by (argv[0], looked up in PATH as the
// shell did) when that is this very file, a symbolic link's name
// included, and else the binary's own path (os.Executable); never
// /proc/self/exe, which would name the process "exe".
func selfPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		a, errA := os.Stat(p)
		b, errB := os.Stat(self)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return p, nil
		}
	}
	return self, nil
}

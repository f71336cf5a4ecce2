//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// restartEnv marks the image that restartForRuntime executed, so that a
// kernel that did not keep the slack across execve never makes it loop.
const restartEnv = "SLUICE_RUNTIME_EXEC"

// restartForRuntime starts the process again, in the same process, with
// what the Go runtime takes only at its start: the timer slack slack (> 0)
// for every thread, and with awake the runtime's monitor thread kept from
// its deep sleep.
//
// The timer slack is the margin by which the kernel may delay a thread's
// timed sleep to end it together with others (prctl PR_SET_TIMERSLACK). A
// thread takes the slack of the thread that starts it, and the runtime
// starts its monitor thread (sysmon) before main runs. That thread sleeps
// 20 µs at a time whenever the process has just come back from waiting or
// a blocking system call, and on a busy CPU every such wake-up is a
// context switch taken from the work.
//
// The monitor thread also sleeps deeply, on a futex, whenever every P of
// the process is idle, and the first system call after that wakes it: a
// replicated node waits between log entries and calls the kernel at each
// (a message read, a sync), so it wakes that thread once an entry or more.
// The runtime keeps the thread from its deep sleep while GODEBUG's
// schedtrace is set; at its largest value (monitorAwakeDebug) it prints a
// trace line only every 24.8 days of the system's uptime, and the thread
// then sleeps its own 20 µs to 10 ms instead, which the timer slack groups.
//
// The binary is executed again over itself (same process, same name,
// arguments and environment, plus GODEBUG's schedtrace when awake and the
// environment's GODEBUG does not set it, and restartEnv): the new image's
// first thread keeps the slack, every thread the runtime starts from it
// inherits it, and the new runtime reads GODEBUG.
//
// It returns, without executing anything, when the process already runs
// as asked or is the image it executed; on an error it leaves the slack
// as it was.
func restartForRuntime(slack time.Duration, awake bool) error {
	if _, again := os.LookupEnv(restartEnv); again {
		os.Unsetenv(restartEnv)
		return nil
	}
	runtime.LockOSThread() // prctl sets the calling thread's slack, and execve keeps the caller's
	defer runtime.UnlockOSThread()
	env := os.Environ()
	restart := false
	if awake {
		if debug, ok := withMonitorAwake(os.Getenv("GODEBUG")); ok {
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
			env = append(env, "GODEBUG="+debug)
			restart = true
		}
	}
	cur := -1
	if slack > 0 {
		var err error
		if cur, err = unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err != nil {
			return fmt.Errorf("reading the timer slack: %w", err)
		}
		if time.Duration(cur) != slack {
			if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack.Nanoseconds()), 0, 0, 0); err != nil {
				return fmt.Errorf("setting the timer slack: %w", err)
			}
			restart = true
		}
	}
	if !restart {
		return nil
	}
	exe, err := selfPath()
	if err == nil {
		err = syscall.Exec(exe, os.Args, append(env, restartEnv+"=1"))
	}
	if cur >= 0 {
		unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0)
	}
	return fmt.Errorf("executing the binary again to start with the runtime's settings: %w", err)
}

// monitorAwakeDebug is the GODEBUG setting that keeps the runtime's
// monitor thread from its deep sleep: schedtrace's largest period, in ms.
const monitorAwakeDebug = "schedtrace=2147483647"

// withMonitorAwake returns debug (a GODEBUG value) with monitorAwakeDebug
// added, and false if debug already sets schedtrace: the value given
// stands.
func withMonitorAwake(debug string) (string, bool) {
	for _, kv := range strings.Split(debug, ",") {
		if strings.HasPrefix(strings.TrimSpace(kv), "schedtrace=") {
			return "", false
		}
	}
	if debug == "" {
		return monitorAwakeDebug, true
	}
	return debug + "," + monitorAwakeDebug, true
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

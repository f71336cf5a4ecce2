//go:build !linux

package childproc

import "os/exec"

// KillWithParent does nothing where the kernel has no parent-death signal:
// the caller's cleanup stops the child.
func KillWithParent(cmd *exec.Cmd) {}

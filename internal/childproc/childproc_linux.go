package childproc

import (
	"os/exec"
	"syscall"
)

// KillWithParent asks the kernel to send cmd SIGKILL when the thread that
// starts it dies, which for a Go program is when the process dies: the
// runtime ends no thread of an unlocked goroutine. Call it before Start.
func KillWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

//go:build linux

package childproc

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChildDiesWithItsParent: a parent started here starts a sleeping
// child with KillWithParent and is then killed with SIGKILL; the child
// is gone within a few seconds.
func TestChildDiesWithItsParent(t *testing.T) {
	if os.Getenv("CHILDPROC_PARENT") == "1" {
		child := exec.Command("sleep", "60")
		KillWithParent(child)
		if err := child.Start(); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(child.Process.Pid) + "\n")
		time.Sleep(time.Minute)
		return
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep binary")
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithItsParent$")
	parent.Env = append(os.Environ(), "CHILDPROC_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("the parent printed %q, not a pid", buf[:n])
	}
	parent.Process.Kill()
	parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d outlived its killed parent by 10 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A child listening on a port the kernel chose: ListenAddrs finds it.
func TestListenAddrsFindsAChildsPort(t *testing.T) {
	if os.Getenv("CHILDPROC_LISTEN") == "1" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(ln.Addr().String() + "\n")
		time.Sleep(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestListenAddrsFindsAChildsPort$")
	cmd.Env = append(os.Environ(), "CHILDPROC_LISTEN=1")
	KillWithParent(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	said, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child said nothing: %v", err)
	}
	got, err := ListenAddrs(cmd.Process.Pid)
	if err != nil || len(got) != 1 || got[0].String() != strings.TrimSpace(said) {
		t.Fatalf("ListenAddrs = %v, %v; the child listens on %s", got, err, said)
	}
}

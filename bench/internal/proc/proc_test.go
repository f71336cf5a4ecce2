package proc

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestSelf reads this test process: it has used some CPU, holds some
// memory.
func TestSelf(t *testing.T) {
	// /proc counts CPU in ticks of 10 ms: spin until one shows, within 2 s.
	var cpu time.Duration
	var err error
	sum := 0
	for start := time.Now(); cpu == 0 && err == nil && time.Since(start) < 2*time.Second; {
		for i := range 1_000_000 {
			sum += i
		}
		cpu, err = CPU(os.Getpid())
	}
	if err != nil || cpu <= 0 {
		t.Fatalf("CPU = %v, %v after spinning (sum %d)", cpu, err, sum)
	}
	rss, err := RSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("RSS = %d, %v; want at least 1 MiB", rss, err)
	}
	if _, err := CPU(1 << 30); err == nil {
		t.Errorf("CPU of a pid that does not exist: no error")
	}
}

// ReadPortsFile takes the first address of each listener, as sluice writes them.
func TestReadPortsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.ports")
	if _, err := ReadPortsFile(path); err == nil {
		t.Fatal("ReadPortsFile of no file: no error")
	}
	os.WriteFile(path, []byte("resp 127.0.0.1:4000\nresp [::1]:4000\nmetrics 127.0.0.1:9100\n"), 0o644)
	got, err := ReadPortsFile(path)
	if err != nil || len(got) != 2 || got["resp"] != "127.0.0.1:4000" || got["metrics"] != "127.0.0.1:9100" {
		t.Fatalf("ReadPortsFile = %v, %v", got, err)
	}
}

// A redis-server told to bind a port another process holds exits with the message AddrInUse
// knows; one drawn port is in the range outside the kernel's ephemeral ports.
func TestAddrInUseReadsRedisServer(t *testing.T) {
	if p := DrawPort(); p < 20000 || p >= 32768 {
		t.Fatalf("DrawPort = %d", p)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // held while redis-server tries it
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	done := make(chan []byte, 1)
	go func() { out, _ := cmd.CombinedOutput(); done <- out }()
	select {
	case out := <-done:
		if !AddrInUse(string(out)) {
			t.Fatalf("redis-server on a held port said %q; AddrInUse = false", out)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("redis-server on a held port still running after 10 s")
	}
}

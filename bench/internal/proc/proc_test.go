package proc

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestSelf reads this test process: it has used some CPU, holds some
// memory, and a free port can be listened on.
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
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listen on the free port %d: %v", port, err)
	}
	ln.Close()
	if _, err := CPU(1 << 30); err == nil {
		t.Errorf("CPU of a pid that does not exist: no error")
	}
}

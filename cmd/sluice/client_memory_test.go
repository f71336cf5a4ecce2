package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The clients' buffers of the real process: many connections each holding
// an unfinished command near the query buffer limit.

// residentKB reads a VmRSS or VmHWM line of /proc/pid/status, in kB; 0 where
// there is no /proc.
func residentKB(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// TestUnfinishedCommandsOfManyClientsStayWithinMaxmemoryClients: 150
// connections each send 7 MB of a command that never completes, which
// without a cap holds 150 buffers of 8 MiB (1.2 GiB). With
// --maxmemory-clients 64mb the largest are closed as they grow: the
// accounted total ends within the cap, the process's peak resident size
// stays far below what the buffers would take, the evictions are logged
// and counted, and PING is answered.
func TestUnfinishedCommandsOfManyClientsStayWithinMaxmemoryClients(t *testing.T) {
	if testing.Short() {
		t.Skip("sends about 1 GB over loopback")
	}
	p := start(t, "--maxmemory-clients", "64mb", "--save", "0", "--dir", t.TempDir())
	pid := p.cmd.Process.Pid
	if residentKB(pid, "VmHWM") == 0 {
		t.Skip("no /proc/PID/status here to read the peak resident size from")
	}
	startKB := residentKB(pid, "VmRSS")

	var cmd bytes.Buffer
	cmd.WriteString("*1001\r\n$4\r\nECHO\r\n")
	arg := "$1048575\r\n" + strings.Repeat("y", 1<<20-1) + "\r\n"
	for range 7 {
		cmd.WriteString(arg)
	}
	const conns = 150
	var wg sync.WaitGroup
	conn := make([]net.Conn, conns)
	for i := range conn {
		nc, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conn[i] = nc
	}
	for _, nc := range conn {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc.SetWriteDeadline(time.Now().Add(60 * time.Second))
			nc.Write(cmd.Bytes()) // an evicted client's write fails
		}()
	}
	wg.Wait()

	rdb := client(t, p)
	ctx := context.Background()
	// Wait until the server reads nothing more than the INFO commands here:
	// the survivors' bytes are all in.
	for last, deadline := int64(-1), time.Now().Add(20*time.Second); ; time.Sleep(300 * time.Millisecond) {
		n, _ := strconv.ParseInt(infoField(t, rdb, "stats", "total_net_input_bytes"), 10, 64)
		if last >= 0 && n-last < 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server was still reading after 20 s")
		}
		last = n
	}
	peakKB := residentKB(pid, "VmHWM")
	total, _ := strconv.ParseInt(infoField(t, rdb, "memory", "mem_clients_normal"), 10, 64)
	evicted, _ := strconv.Atoi(infoField(t, rdb, "stats", "evicted_clients"))
	t.Logf("peak resident %d MB (%d MB at start); mem_clients_normal %d; %d of %d clients evicted",
		peakKB>>10, startKB>>10, total, evicted, conns)
	if total > 64<<20 {
		t.Errorf("mem_clients_normal %d; want at most 64 MiB", total)
	}
	if evicted < conns-8 {
		t.Errorf("evicted_clients %d; want at least %d (64 MiB holds 8 buffers of 8 MiB at most)", evicted, conns-8)
	}
	// The cap plus the garbage the collector has not reclaimed yet (it lets
	// the heap grow to twice what is live): 192-316 MB measured, 1420 MB
	// without the cap. The margin is for a loaded machine, where the
	// collector runs late.
	if peakKB > 640<<10 {
		t.Errorf("peak resident size %d MB; want under 640 MB", peakKB>>10)
	}
	if v, err := rdb.Ping(ctx).Result(); err != nil || v != "PONG" {
		t.Fatalf("PING after the evictions: %q, %v", v, err)
	}
	p.stop()
	if n := strings.Count(p.log.String(), "client evicted"); n != evicted {
		t.Errorf("%d eviction log lines for %d evictions", n, evicted)
	}
}

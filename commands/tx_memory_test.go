package commands

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// queueBatch sends commands first … first+n-1 of a transaction on c, a mix
// of short queued commands (where the allocator's rounding and the slice
// headers weigh most against the arguments' bytes), and returns the
// replies' error, if any (the connection closed).
func queueBatch(c *testutil.Conn, first, n int) string {
	var batch strings.Builder
	for j := first; j < first+n; j++ {
		if j%2 == 0 {
			fmt.Fprintf(&batch, "ECHO %d\r\n", j)
		} else {
			fmt.Fprintf(&batch, "RL.TOKEN k%d 10/s 20\r\n", j)
		}
	}
	c.NC.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.NC, batch.String()); err != nil {
		return "write: " + err.Error()
	}
	for j := 0; j < n; j++ {
		c.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
		r, err := testutil.ReadReply(c.R)
		if err != nil {
			return "read: " + err.Error()
		}
		if r != "+QUEUED" {
			return fmt.Sprintf("command %d = %q", first+j, r)
		}
	}
	return ""
}

// totMem reads tot-mem of the client id from CLIENT LIST on c.
func totMem(t *testing.T, c *testutil.Conn, id string) int64 {
	t.Helper()
	for _, line := range strings.Split(c.Do("CLIENT LIST\r\n"), "\n") {
		if !strings.Contains(line, "id="+id+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "tot-mem="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
	}
	t.Fatalf("no tot-mem for id %s", id)
	return 0
}

// liveHeap returns the heap in use after two collections.
func liveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// A queued transaction's accounted footprint (tot-mem, what
// --maxmemory-clients limits) is at least the heap its queue holds: the
// copies of the arguments and their slice headers as the allocator sizes
// them, the queued command records and the decisions' items. The server
// runs in this process, so the heap's growth across the queueing is what
// the queue holds; 1 % of it is left for the rest of the process.
func TestQueuedCommandsAccountAtLeastTheirHeap(t *testing.T) {
	s := startServer(t, testConfig{})
	a, b := testutil.Dial(t, s.addr), testutil.Dial(t, s.addr)
	id := strings.TrimPrefix(a.Do("CLIENT ID\r\n"), ":")
	const n, per = 40000, 1000
	a.Do("MULTI\r\n")
	before, heapBefore := totMem(t, b, id), liveHeap()
	for i := 0; i < n; i += per {
		if err := queueBatch(a, i, per); err != "" {
			t.Fatal(err)
		}
	}
	grew, heapGrew := totMem(t, b, id)-before, liveHeap()-heapBefore
	t.Logf("%d queued commands: tot-mem grew %d bytes (%.1f a command), the heap %d (%.1f a command)",
		n, grew, float64(grew)/n, heapGrew, float64(heapGrew)/n)
	if grew < heapGrew-heapGrew/100 {
		t.Fatalf("tot-mem grew %d bytes for %d queued commands, the heap %d; want at least the heap counted", grew, n, heapGrew)
	}
	if r := a.Do("DISCARD\r\n"); r != "+OK" {
		t.Fatalf("DISCARD = %q", r)
	}
}

// A client that queues past --maxmemory-clients is closed (evicted, as the
// docs say of any client whose buffers pass the cap) before it holds much
// more than the cap: with a 4 MiB cap and about 230 bytes a queued command,
// within 20,000 commands, and the server counts the eviction.
func TestQueuingPastMaxmemoryClientsEvicts(t *testing.T) {
	const capBytes = 4 << 20
	s := startServer(t, testConfig{MaxMemoryClients: capBytes})
	a, b := testutil.Dial(t, s.addr), testutil.Dial(t, s.addr)
	a.Do("MULTI\r\n")
	const per, most = 500, 200000
	sent, err := 0, ""
	for ; sent < most && err == ""; sent += per {
		err = queueBatch(a, sent, per)
	}
	if err == "" {
		t.Fatalf("%d commands queued under a %d-byte cap; want the client closed", sent, capBytes)
	}
	if !strings.HasPrefix(err, "read: ") && !strings.HasPrefix(err, "write: ") {
		t.Fatalf("queueing past the cap: %s; want the connection closed", err)
	}
	if sent > 20000 {
		t.Errorf("closed after %d commands; want within 20000 (4 MiB at about 230 bytes each)", sent)
	}
	if n := infoInt(t, b, "stats", "evicted_clients"); n != 1 {
		t.Errorf("evicted_clients = %d; want 1", n)
	}
	if r := b.Do("PING\r\n"); r != "+PONG" {
		t.Fatalf("PING after the eviction = %q", r)
	}
}

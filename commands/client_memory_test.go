package commands

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// maxmemory-clients over real sockets, with both I/O models: many clients
// each holding an unfinished large command.

// unfinished returns the first size bytes (about) of a command of args
// arguments of 1 MiB-1 bytes each after name: a command that never
// completes unless the rest follows.
func unfinished(name string, args, size int) []byte {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(args+1) + "\r\n$" + strconv.Itoa(len(name)) + "\r\n" + name + "\r\n")
	arg := "$" + strconv.Itoa(1<<20-1) + "\r\n" + strings.Repeat("y", 1<<20-1) + "\r\n"
	for b.Len()+len(arg) <= size {
		b.WriteString(arg)
	}
	return []byte(b.String())
}

// infoInt reads one integer field of INFO section on c.
func infoInt(t *testing.T, c *testutil.Conn, section, field string) int64 {
	t.Helper()
	text := c.Do("INFO " + section + "\r\n")
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %s", section, line)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s:\n%s", section, field, text)
	return 0
}

// settled waits until the server has read nothing new but c's own INFO
// commands for 300 ms: every client's bytes are in its buffer or it is gone.
func settled(t *testing.T, c *testutil.Conn) {
	t.Helper()
	last, since := int64(-1), time.Now()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		n := infoInt(t, c, "stats", "total_net_input_bytes")
		if n != last+int64(len("INFO stats\r\n")) {
			since = time.Now()
		} else if time.Since(since) > 300*time.Millisecond {
			return
		}
		last = n
	}
	t.Fatal("the server was still reading after 20 s")
}

// TestClientBuffersPastMaxmemoryClientsEvictTheLargest: twelve clients each
// send 6 MB of a command that never completes (each buffer grows to 8 MiB,
// 96 MiB in all) against a 24 MiB maxmemory-clients. The clients holding
// the most are closed until the rest fit: the accounted total of the
// clients not being closed is never more than one buffer's growth step over
// the cap, nor is the whole total once they are gone; clients with smaller
// unfinished commands, a CLIENT NO-EVICT client holding 8 MiB, and PING
// clients are served all along; INFO shows the memory and the evictions.
func TestClientBuffersPastMaxmemoryClientsEvictTheLargest(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		const (
			limit = 24 << 20
			step  = 4 << 20 // the last growth of a buffer: 4 MiB to 8 MiB
			bigs  = 12
		)
		ts := startServer(t, testConfig{EventLoops: loops, MaxMemoryClients: limit})
		addr := ts.addr
		admin := testutil.Dial(t, addr)

		// A sampler of the accounted totals: of the clients not chosen for
		// eviction, which the cap bounds, and of all, the clients being
		// closed included, which it bounds once they are gone.
		var peak, peakAll atomic.Int64
		stop, stopPings := make(chan struct{}), make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				st := ts.srv.Stats()
				peak.Store(max(peak.Load(), st.ClientMemory-st.EvictingMemory))
				peakAll.Store(max(peakAll.Load(), st.ClientMemory))
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Microsecond):
				}
			}
		}()

		// Smaller unfinished commands: 100 kB of a 200 kB ECHO.
		echo := strings.Repeat("m", 200_000)
		medium := testutil.DialAnswering(t, addr, 3)
		for _, c := range medium {
			c.Send("*2\r\n$4\r\nECHO\r\n$200000\r\n" + echo[:100_000])
		}
		exempt := testutil.Dial(t, addr)
		if got := exempt.Do("CLIENT NO-EVICT on\r\n"); got != "+OK" {
			t.Fatalf("CLIENT NO-EVICT on = %q", got)
		}
		if got := exempt.Do("CLIENT INFO\r\n"); !strings.Contains(got, " flags=e ") {
			t.Errorf("CLIENT INFO of a no-evict client: %q; want flags=e", got)
		}

		// PINGs all along, from another client.
		pinger := testutil.Dial(t, addr)
		var pingErr atomic.Value
		pingDone := make(chan struct{})
		go func() {
			defer close(pingDone)
			for {
				select {
				case <-stopPings:
					return
				case <-time.After(5 * time.Millisecond):
				}
				pinger.NC.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.WriteString(pinger.NC, "PING\r\n"); err != nil {
					pingErr.Store("PING: " + err.Error())
					return
				}
				pinger.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
				if got, err := testutil.ReadReply(pinger.R); got != "+PONG" {
					pingErr.Store("PING = " + got + ", " + errText(err))
					return
				}
			}
		}()

		// The exempt client holds 6 MB of a DEL of seven 1 MiB keys; the
		// others 6 MB of an ECHO of a thousand.
		exemptCmd := unfinished("DEL", 7, 6<<20)
		big := make([]*testutil.Conn, bigs)
		for i := range big {
			big[i] = testutil.Dial(t, addr)
		}
		bigCmd := unfinished("ECHO", 1000, 6<<20)
		var wg sync.WaitGroup
		for i, c := range append([]*testutil.Conn{exempt}, big...) {
			cmd := bigCmd
			if i == 0 {
				cmd = exemptCmd
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.NC.SetWriteDeadline(time.Now().Add(20 * time.Second))
				c.NC.Write(cmd) // an evicted client's write fails: fine
			}()
		}
		wg.Wait()
		close(stopPings)
		<-pingDone
		settled(t, admin)
		close(stop)
		<-sampled
		if e := pingErr.Load(); e != nil {
			t.Errorf("a PING client during the evictions: %v", e)
		}

		total := infoInt(t, admin, "memory", "mem_clients_normal")
		evicted := infoInt(t, admin, "stats", "evicted_clients")
		maxIn := infoInt(t, admin, "clients", "client_recent_max_input_buffer")
		t.Logf("accounted: %d bytes after; sampled peaks %d, %d with the clients being closed; %d clients evicted; cap %d",
			total, peak.Load(), peakAll.Load(), evicted, limit)
		if total > limit+step || peak.Load() > limit+step {
			t.Errorf("mem_clients_normal %d, sampled peak %d; want at most maxmemory-clients %d + one growth step %d",
				total, peak.Load(), limit, step)
		}
		if got := infoInt(t, admin, "memory", "maxmemory_clients"); got != limit {
			t.Errorf("maxmemory_clients = %d; want %d", got, limit)
		}
		if maxIn != 8<<20 {
			t.Errorf("client_recent_max_input_buffer = %d; want %d (the exempt client's)", maxIn, 8<<20)
		}

		// The big clients that are gone are the evicted ones; at most
		// (24 MiB - the exempt client's 8 MiB) / 8 MiB of them remain.
		list := admin.Do("CLIENT LIST\r\n")
		left := 0
		for _, c := range big {
			if strings.Contains(list, " addr="+c.NC.LocalAddr().String()+" ") {
				left++
			}
		}
		if left > 2 || int64(bigs-left) != evicted {
			t.Errorf("%d of %d big clients still connected, evicted_clients %d; want at most 2 left and the rest evicted",
				left, bigs, evicted)
		}

		// Everyone else is still served.
		for i, c := range medium {
			if got := c.Do(echo[100_000:] + "\r\n"); got != "$"+echo {
				t.Errorf("medium client %d: reply %q; want its echo", i, testutil.Clip(got))
			}
		}
		if got := exempt.Do(string(unfinished("DEL", 7, 7<<20+100)[len(exemptCmd):])); got != ":0" {
			t.Errorf("the no-evict client's DEL = %q; want :0", testutil.Clip(got))
		}
		if got := pinger.Do("PING\r\n"); got != "+PONG" {
			t.Errorf("PING after the evictions = %q", got)
		}
		if got := infoInt(t, admin, "clients", "client_recent_max_output_buffer"); got < int64(len(echo)) {
			t.Errorf("client_recent_max_output_buffer = %d after a %d-byte reply", got, len(echo))
		}

		// Buffers given back are accounted back: the no-evict client's is
		// 16 KiB again, and the big ones left go.
		for _, c := range big {
			c.NC.Close()
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			n := infoInt(t, admin, "memory", "mem_clients_normal")
			if n < 2<<20 {
				t.Logf("%d bytes accounted once the large commands are done", n)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("mem_clients_normal = %d with no large command left; want under 2 MiB", n)
			}
		}
		testutil.PingsOnNewConn(t, addr)
		if n := ts.srv.Stats().Panics; n != 0 {
			t.Errorf("the server recovered %d panics", n)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestClientNoEvict: CLIENT NO-EVICT on|off answers OK, shows as flags=e in
// CLIENT INFO (which go-redis parses), refuses other values as Redis does,
// and once turned off the client is evictable again.
func TestClientNoEvict(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		ts := startServer(t, testConfig{EventLoops: loops, MaxMemoryClients: 4 << 20})
		addr := ts.addr
		c := testutil.Dial(t, addr)
		for _, tc := range []struct{ cmd, want string }{
			{"CLIENT NO-EVICT maybe", "-ERR syntax error"},
			{"CLIENT NO-EVICT", "-ERR wrong number of arguments for 'client|no-evict' command"},
			{"CLIENT NO-EVICT on on", "-ERR wrong number of arguments for 'client|no-evict' command"},
			{"CLIENT NO-EVICT On", "+OK"},
			{"CLIENT NO-EVICT OFF", "+OK"},
		} {
			if got := c.Do(tc.cmd + "\r\n"); got != tc.want {
				t.Errorf("%s = %q; want %q", tc.cmd, got, tc.want)
			}
		}

		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, DisableIndentity: true})
		defer rdb.Close()
		ctx := context.Background()
		if err := rdb.Do(ctx, "CLIENT", "NO-EVICT", "on").Err(); err != nil {
			t.Fatal(err)
		}
		info, err := rdb.ClientInfo(ctx).Result()
		if err != nil || info.Flags&redis.ClientNoEvict == 0 || info.TotalMemory <= 0 {
			t.Fatalf("CLIENT INFO after NO-EVICT on: %+v, %v; want the no-evict flag and tot-mem", info, err)
		}
		if err := rdb.Do(ctx, "CLIENT", "NO-EVICT", "off").Err(); err != nil {
			t.Fatal(err)
		}
		if info, err = rdb.ClientInfo(ctx).Result(); err != nil || info.Flags&redis.ClientNoEvict != 0 {
			t.Fatalf("CLIENT INFO after NO-EVICT off: %+v, %v; want no flag", info, err)
		}

		// Off again, c is evicted as soon as its command outgrows the cap.
		go func() {
			c.NC.SetWriteDeadline(time.Now().Add(5 * time.Second))
			c.NC.Write(unfinished("ECHO", 10, 6<<20)) // fails once the server closes
		}()
		c.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.R.Read(make([]byte, 64)); n > 0 || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			t.Fatalf("a client evicted while sending read %d bytes, %v; want the connection closed", n, err)
		}
		if n := ts.srv.Stats().EvictedClients; n != 1 {
			t.Errorf("evicted_clients = %d; want 1", n)
		}
		testutil.PingsOnNewConn(t, addr)
	})
}

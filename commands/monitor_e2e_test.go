package commands

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// MONITOR over real sockets: the feed's format, redaction and escaping,
// and a monitor that never reads, which is closed at its buffer's limit
// while the server keeps serving.

func TestMonitorStreamsTheOtherClientsCommands(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv := startServer(t, testConfig{EventLoops: loops})
		mon := testutil.Dial(t, srv.addr)
		if got := mon.Do("MONITOR\r\n"); got != "+OK" {
			t.Fatalf("MONITOR = %q; want +OK", got)
		}
		rdb := srv.client(t, proto(2))
		do(t, rdb, "RL.TOKEN", "user:1", "10/s", 20)
		doErr(t, rdb, "AUTH", "hunter2")
		do(t, rdb, "ECHO", "a\x00\"b\n")
		head := `^\+\d{10}\.\d{6} \[0 127\.0\.0\.1:\d+\] `
		for _, want := range []string{
			`"RL.TOKEN" "user:1" "10/s" "20"$`,
			`"AUTH" "\(redacted\)"$`,
			`"ECHO" "a\\x00\\"b\\n"$`,
		} {
			line := mon.Reply()
			for strings.Contains(line, `] "hello" `) { // go-redis's handshake, redacted too
				line = mon.Reply()
			}
			if !regexp.MustCompile(head + want).MatchString(line) {
				t.Errorf("MONITOR printed %q; want %s%s", line, head, want)
			}
		}
	})
}

func TestMonitorThatNeverReadsIsClosedAndTheServerStaysFast(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		srv := startServer(t, testConfig{EventLoops: loops})
		mon := testutil.Dial(t, srv.addr)
		mon.NC.(*net.TCPConn).SetReadBuffer(4096)
		if got := mon.Do("MONITOR\r\n"); got != "+OK" {
			t.Fatalf("MONITOR = %q; want +OK", got)
		}
		// from here the monitor reads nothing
		rdb := srv.client(t, proto(2))
		ctx := context.Background()
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		key := strings.Repeat("k", 1000) // each command is a line of about 1 KB in the feed
		closed := false
		worstPing := time.Duration(0)
		for round := 0; round < 200 && !closed; round++ { // at most 200 × 200 KB of feed
			pipe := rdb.Pipeline()
			for i := 0; i < 200; i++ {
				pipe.Do(ctx, "RL.TOKEN", key+fmt.Sprint(i), "1000/s", 1000)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			// PING's best of three: the server does not wait for the monitor
			// (robust on a loaded 2-core machine: the best, against 100 ms)
			best := time.Hour
			for i := 0; i < 3; i++ {
				start := time.Now()
				if err := rdb.Ping(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				best = min(best, time.Since(start))
			}
			worstPing = max(worstPing, best)
			list := do(t, rdb, "CLIENT", "LIST").(string)
			closed = !strings.Contains(list, "cmd=monitor")
		}
		if !closed {
			t.Fatalf("a monitor that reads nothing is still connected after 40 MB of feed")
		}
		if worstPing > 100*time.Millisecond {
			t.Errorf("PING took %v (best of three) while the monitor was full; want well under 100 ms", worstPing)
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		// the monitor's buffer is bounded by MonitorBufferLimit (4 MiB), twice
		// over at most (its push buffer and its unwritten replies)
		if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 3*MonitorBufferLimit {
			t.Errorf("the heap grew by %d bytes; want under %d", grew, 3*MonitorBufferLimit)
		}
		// and the server serves a new monitor, which sees the next command
		mon2 := testutil.Dial(t, srv.addr)
		if got := mon2.Do("MONITOR\r\n"); got != "+OK" {
			t.Fatalf("a second MONITOR = %q", got)
		}
		do(t, rdb, "PING")
		if line := mon2.Reply(); !strings.HasSuffix(line, `"PING"`) {
			t.Errorf("the second monitor printed %q", line)
		}
	})
}

func TestMonitorThroughGoRedis(t *testing.T) {
	srv := startServer(t, testConfig{})
	// MONITOR on a connection of its own, as go-redis asks: a client's
	// pool (v9.7.0) takes the monitor's connection back while its reader
	// goroutine still reads it, and the pool's check for unread bytes
	// races with that read (redis/go-redis PR #3901). The Conn is not
	// closed here: closing it would run that check too; the client's
	// Close, at cleanup, closes it without one.
	mon := srv.client(t, proto(2)).Conn()
	ch := make(chan string, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := mon.Monitor(ctx, ch)
	m.Start()
	defer m.Stop()
	rdb := srv.client(t, &redis.Options{Protocol: 2, DisableIndentity: true})
	deadline := time.After(5 * time.Second)
	for {
		do(t, rdb, "RL.FIXED", "seen", 10, "1m")
		select {
		case line := <-ch:
			if strings.Contains(line, `"RL.FIXED" "seen" "10" "1m"`) {
				return
			}
		case <-deadline:
			t.Fatal("go-redis's Monitor saw no RL.FIXED in 5 s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

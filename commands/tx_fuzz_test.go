package commands

import (
	"bufio"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/testutil"
	"github.com/sluice-rl/sluice/store"
)

// FuzzTransactionQueue sends MULTI, then fuzzed commands (one per line,
// words split on spaces), then EXEC, and checks the queue's contract: every
// command is answered once; a queueing error (other than a nested MULTI or
// a WATCH, which doom nothing, as in Redis) makes EXEC answer EXECABORT and
// leaves the key space empty; otherwise EXEC answers one reply per QUEUED.
func FuzzTransactionQueue(f *testing.F) {
	for _, seed := range []string{
		"RL.TOKEN k 10/s 20\nRL.FIXED f 2 1m",
		"RL.TOKEN k ten/s 20\nRL.FIXED f 2 1m",
		"RL.TOKEN k 10/s\nPING",
		"MULTI\nWATCH k\nRL.SLIDING s 3 1s 2",
		"DEL k\nRL.LOG l 3 10s",
		"RL.ALL 1 TOKEN a 1/s 2 FIXED b 1 1m\nCL.THROTTLE c 0 1 60",
		"RL.ACQUIRE c 2 30s id\nRL.RELEASE c id\nECHO x\nTIME\nUNWATCH",
		"NOPE\nRL.FIXED f 0 1m",
		"RL.TOKEN k 10/s 20\nRL.FIXED k 2 1m",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script string) {
		cfg := DefaultConfig()
		st := store.New(4)
		h, c := loopbackOn(t, cfg, st)
		h.Clock().Set(epochMs * 1e6)
		send := func(args []string) (string, bool) {
			var b strings.Builder
			b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
			for _, a := range args {
				b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
			}
			out, _ := c.Feed([]byte(b.String()))
			r := bufio.NewReader(strings.NewReader(string(out)))
			reply, err := testutil.ReadReply(r)
			if err != nil || r.Buffered() != 0 {
				t.Fatalf("%q: reply %q, %v, %d bytes more; want exactly one reply", args, out, err, r.Buffered())
			}
			return reply, true
		}
		if r, _ := send([]string{"MULTI"}); r != "+OK" {
			t.Fatalf("MULTI = %q", r)
		}
		dirty, queued := false, 0
		lines := strings.Split(script, "\n")
		if len(lines) > 32 {
			lines = lines[:32]
		}
		for _, line := range lines {
			args := strings.Fields(line)
			if len(args) == 0 {
				continue
			}
			switch strings.ToLower(args[0]) {
			case "exec", "discard", "quit":
				continue // they end the transaction or the connection
			}
			r, _ := send(args)
			switch {
			case r == "+QUEUED":
				queued++
			case r == "-ERR MULTI calls can not be nested", r == "-ERR WATCH inside MULTI is not allowed":
			case strings.HasPrefix(r, "-"):
				dirty = true
			default:
				t.Fatalf("%q inside MULTI = %q; want QUEUED or an error", line, r)
			}
		}
		r, _ := send([]string{"EXEC"})
		if dirty {
			if r != "-EXECABORT Transaction discarded because of previous errors." {
				t.Fatalf("EXEC after a queueing error = %q; want EXECABORT", r)
			}
			if n, _ := st.DBSize(epochMs * 1e6); n != 0 {
				t.Fatalf("EXECABORT left %d keys; want nothing applied", n)
			}
			return
		}
		if !strings.HasPrefix(r, "[") || queued == 0 && r != "[]" {
			t.Fatalf("EXEC = %q; want an array of %d replies", r, queued)
		}
	})
}

// BenchmarkTransactionOf16 runs MULTI, 16 RL.TOKEN on 16 keys and EXEC as
// one batch; ns/op is per transaction.
func BenchmarkTransactionOf16(b *testing.B) {
	c := loopback(b)
	batch := append([]byte("*1\r\n$5\r\nMULTI\r\n"), pipeline(16, 1000, "RL.TOKEN")...)
	batch = append(batch, "*1\r\n$4\r\nEXEC\r\n"...)
	feed(b, c, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		feed(b, c, batch)
	}
}

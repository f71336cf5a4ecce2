package commands

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/internal/testutil"
)

// txScript is a transaction's edge cases as inline commands, with no
// command that differs between Redis and sluice: the replies must be the
// same byte for byte.
var txScript = []string{
	"MULTI", "MULTI", "PING", "ECHO hi", "EXEC", // nested MULTI: an error that dooms nothing
	"EXEC", "DISCARD", // without MULTI
	"MULTI", "FOO bar", "PING", "EXEC", // an unknown command: EXECABORT
	"MULTI", "ECHO a b", "EXEC", // an arity error: EXECABORT
	"MULTI", "WATCH k", "PING", "EXEC", // WATCH inside MULTI: an error that dooms nothing
	"MULTI", "EXEC", // an empty transaction: an empty array
	"MULTI", "PING", "DISCARD", "DISCARD", "EXEC",
	"WATCH", "WATCH k", "UNWATCH", "MULTI", "UNWATCH", "TIME x", "DISCARD",
	"MULTI", "ECHO", "ECHO a", "EXEC", // EXEC after EXECABORT has closed the transaction
	"MULTI", "AUTH x", "SELECT 0", "EXEC", // queued connection commands run at EXEC, errors in place
	// string and key-space commands run in order at EXEC, errors in place
	"MULTI", "SET s 5", "INCR s", "INCRBY s x", "GET s", "TYPE s", "TTL s", "PTTL s", "EXISTS s t s",
	"EXPIRE s 100", "TTL s", "SET t abc", "INCR t", "DEL s t u", "GET s", "TYPE s", "PTTL s", "EXEC",
	"MULTI", "SET s 1 PX 100 EX 1", "GET", "EXEC", // a syntax error runs as an error; an arity error aborts
	"MULTI", "SETEX e 100 v", "PSETEX e 0 v", "SETNX e w", "SETNX f w", "MGET e f nokey", "GETDEL e", "GETDEL e",
	"MGET e f", "DEL f", "EXEC", "SETEX e x v", "PSETEX e -1 v", "MGET", "SETNX e",
	// a script's argument errors answer in EXEC's array, as in Redis
	"MULTI", "EVALSHA 0000000000000000000000000000000000000000 0", "EVAL x -1", "EVAL x 2 k", "EVALSHA abc z", "PING", "EXEC",
	"EXEC",
}

func TestTransactionRepliesAgreeWithRedis(t *testing.T) {
	rds := startRedis(t)
	s := startServer(t, testConfig{})
	want := testutil.Dial(t, rds.Options().Addr)
	got := testutil.Dial(t, s.addr)
	for i, cmd := range txScript {
		w, g := want.Do(cmd+"\r\n"), got.Do(cmd+"\r\n")
		if w != g {
			t.Fatalf("step %d %q: sluice %q; Redis %q", i, cmd, g, w)
		}
	}
}

func TestTransactionRunsDecisionsInOrderAtOneInstant(t *testing.T) {
	s := startServer(t, testConfig{})
	c := testutil.Dial(t, s.addr)
	for _, cmd := range []string{"MULTI", "RL.FIXED f 2 1m", "PING", "RL.TOKEN t 1/s 2 2", "RL.FIXED f 2 1m",
		"RL.FIXED f 2 1m", "RL.ALL 1 FIXED a 1 1m TOKEN t 1/s 2", "CL.THROTTLE c 0 1 60"} {
		want := "+QUEUED"
		if cmd == "MULTI" {
			want = "+OK"
		}
		if r := c.Do(cmd + "\r\n"); r != want {
			t.Fatalf("%s = %q; want %q", cmd, r, want)
		}
	}
	// No decision has been made before EXEC.
	if n := do(t, s.client(t, proto(2)), "EXISTS", "f", "t", "c"); n != int64(0) {
		t.Fatalf("EXISTS before EXEC = %v; want 0", n)
	}
	got := c.Do("EXEC\r\n")
	want := "[[:1 :2 :1 :0 :60000] +PONG [:1 :2 :0 :0 :2000] [:1 :2 :0 :0 :60000] [:0 :2 :0 :60000 :60000] " +
		"[:0 :1 [[:1 :1 :1 :0 :0] [:0 :2 :0 :1000 :2000]]] [:0 :1 :0 :-1 :60]]"
	if got != want {
		t.Fatalf("EXEC =\n %s\nwant\n %s", got, want)
	}
}

func TestExecAbortAppliesNothing(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	ctx := context.Background()
	for _, bad := range [][]any{
		{"RL.TOKEN", "k", "ten/s", 5},        // a syntax error in an argument
		{"RL.TOKEN", "k", "10/s"},            // an arity error
		{"RL.NOPE", "k"},                     // an unknown command
		{"SCAN", 0},                          // a command a transaction may not hold
		{"RL.ALL", 1, "FIXED", "k", 0, "1m"}, // RL.ALL with a bad limit
	} {
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "RL.FIXED", "k", 5, "1m")
			p.Do(ctx, "RL.TOKEN", "other", "1/s", 5)
			p.Do(ctx, bad...)
			p.Do(ctx, "RL.FIXED", "k", 5, "1m")
			return nil
		})
		if err == nil || !strings.HasPrefix(err.Error(), "EXECABORT Transaction discarded because of previous errors.") {
			t.Fatalf("a transaction holding %v: %v; want EXECABORT", bad, err)
		}
		if n := do(t, rdb, "EXISTS", "k", "other"); n != int64(0) {
			t.Fatalf("after EXECABORT (%v) EXISTS = %v; want nothing applied", bad, n)
		}
	}
}

func TestExecReportsRuntimeErrorsInPlace(t *testing.T) {
	s := startServer(t, testConfig{})
	c := testutil.Dial(t, s.addr)
	c.Do("RL.TOKEN tok 1/s 5\r\n")
	for _, cmd := range []string{"MULTI", "RL.FIXED f 5 1m", "RL.FIXED tok 5 1m", "RL.FIXED f 5 1m"} {
		c.Do(cmd + "\r\n")
	}
	got := c.Do("EXEC\r\n")
	want := "[[:1 :5 :4 :0 :60000] -WRONGTYPE Operation against a key holding the wrong kind of value [:1 :5 :3 :0 :60000]]"
	if got != want {
		t.Fatalf("EXEC with a WRONGTYPE inside = %s; want %s (as Redis: the others applied)", got, want)
	}
}

func TestWatchedKeyChangedMakesExecNull(t *testing.T) {
	s := startServer(t, testConfig{})
	a, b := testutil.Dial(t, s.addr), testutil.Dial(t, s.addr)
	// A write by another client between WATCH and EXEC: a null array, nothing applied.
	a.Do("WATCH k other\r\n")
	b.Do("RL.FIXED k 3 1m\r\n")
	a.Do("MULTI\r\n")
	a.Do("RL.FIXED k 3 1m\r\n")
	a.Do("RL.FIXED other 3 1m\r\n")
	a.Send("EXEC\r\n")
	if line, _ := a.R.ReadString('\n'); line != "*-1\r\n" {
		t.Fatalf("EXEC after the watched key changed = %q; want the null array *-1", line)
	}
	if r := b.Do("RL.FIXED k 3 1m 0\r\n"); r != "[:1 :3 :2 :0 :60000]" {
		t.Fatalf("k after a failed EXEC = %s; want one unit taken", r)
	}
	if r := b.Do("EXISTS other\r\n"); r != ":0" {
		t.Fatalf("EXISTS other after a failed EXEC = %s; want 0", r)
	}
	// A denial and a peek write nothing: the watch holds, and EXEC forgets it.
	b.Do("RL.FIXED full 1 1m\r\n")
	a.Do("WATCH full k\r\n")
	b.Do("RL.FIXED full 1 1m\r\n")
	b.Do("RL.FIXED k 3 1m 0\r\n")
	a.Do("MULTI\r\n")
	a.Do("RL.FIXED k 3 1m\r\n")
	if r := a.Do("EXEC\r\n"); r != "[[:1 :3 :1 :0 :60000]]" {
		t.Fatalf("EXEC after a denial and a peek on the watched keys = %s", r)
	}
	// DISCARD and UNWATCH forget the watched keys.
	for _, forget := range [][]string{{"MULTI", "DISCARD"}, {"UNWATCH"}} {
		a.Do("WATCH k\r\n")
		for _, cmd := range forget {
			a.Do(cmd + "\r\n")
		}
		b.Do("RL.FIXED k 30 1m\r\n")
		a.Do("MULTI\r\n")
		a.Do("PING\r\n")
		if r := a.Do("EXEC\r\n"); r != "[+PONG]" {
			t.Fatalf("EXEC after WATCH, %v and a write = %s; want it carried out", forget, r)
		}
	}
}

func TestWatchedKeyThatExpiredMakesExecNullInRESP3(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Debug = DebugYes
	feed := onBytes(t, cfg)
	feed("HELLO 3\r\n")
	feed("RL.FIXED k 5 1s\r\n")
	feed("WATCH k\r\n")
	feed("DEBUG CLOCK ADVANCE 1000\r\n")
	feed("MULTI\r\n")
	feed("RL.FIXED k 5 1s\r\n")
	if got := feed("EXEC\r\n"); got != "_\r\n" {
		t.Fatalf("EXEC after the watched key expired = %q; want RESP3's null _", got)
	}
}

func TestGoRedisWatchRetriesUntilItWins(t *testing.T) {
	s := startServer(t, testConfig{})
	ctx := context.Background()
	rdb := s.client(t, proto(3))
	other := s.client(t, proto(3))
	tries := 0
	txf := func(tx *redis.Tx) error {
		tries++
		if tries == 1 {
			other.Do(ctx, "RL.FIXED", "k", 10, "1m") // a write after WATCH
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "RL.FIXED", "k", 10, "1m", 2)
			return nil
		})
		return err
	}
	err := rdb.Watch(ctx, txf, "k")
	if !errors.Is(err, redis.TxFailedErr) || tries != 1 {
		t.Fatalf("Watch with a conflicting write = %v after %d tries; want TxFailedErr", err, tries)
	}
	if err := rdb.Watch(ctx, txf, "k"); err != nil {
		t.Fatal(err)
	}
	if got := ints(t, do(t, rdb, "RL.FIXED", "k", 10, "1m", 0)); got != "[1 10 7 0 60000]" {
		t.Fatalf("k = %s; want 1 unit taken by the other client and 2 by the transaction that won", got)
	}
}

// TestRacingTransactionsAdmitExactly: 16 clients race transactions that
// each take two units of one key, with an even capacity. A transaction is
// atomic, so its two takes are admitted together or denied together, and
// the total admitted is exactly the capacity.
func TestRacingTransactionsAdmitExactly(t *testing.T) {
	s := startServer(t, testConfig{})
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rdb := s.client(t, proto(2+w%2))
			for i := 0; i < 25; i++ {
				cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Do(ctx, "RL.FIXED", "hot", 500, "1h")
					p.Do(ctx, "RL.FIXED", "hot", 500, "1h")
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				a := cmds[0].(*redis.Cmd).Val().([]any)[0].(int64)
				b := cmds[1].(*redis.Cmd).Val().([]any)[0].(int64)
				if a != b {
					t.Errorf("a transaction's two takes were split: %d, %d", a, b)
				}
				mu.Lock()
				admitted += int(a + b)
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if admitted != 500 {
		t.Fatalf("admitted %d of 800 units; want exactly 500", admitted)
	}
	if got := ints(t, do(t, s.client(t, proto(2)), "RL.FIXED", "hot", 500, "1h", 0)); !strings.HasPrefix(got, "[1 500 0 ") {
		t.Fatalf("hot after the race = %s; want 0 remaining", got)
	}
}

// A transaction's queue counts in its connection's memory (tot-mem, what
// --maxmemory-clients limits), and DISCARD gives the copies back.
func TestQueuedTransactionCountsInClientMemory(t *testing.T) {
	s := startServer(t, testConfig{})
	a, b := testutil.Dial(t, s.addr), testutil.Dial(t, s.addr)
	id := strings.TrimPrefix(a.Do("CLIENT ID\r\n"), ":")
	totMem := func() int {
		list := b.Do("CLIENT LIST\r\n")
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(line, "id="+id+" ") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "tot-mem="); ok {
					n, _ := strconv.Atoi(v)
					return n
				}
			}
		}
		t.Fatalf("no tot-mem for id %s in %q", id, list)
		return 0
	}
	before := totMem()
	a.Do("MULTI\r\n")
	key := strings.Repeat("k", 200)
	var batch strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&batch, "RL.TOKEN %s%d 10/s 20\r\n", key, i)
	}
	a.Send(batch.String())
	for i := 0; i < 2000; i++ {
		if r := a.Reply(); r != "+QUEUED" {
			t.Fatalf("command %d = %q", i, r)
		}
	}
	queued := totMem()
	if queued-before < 2000*200 {
		t.Fatalf("tot-mem %d → %d with 2000 queued commands of 200-byte keys; want the copies counted", before, queued)
	}
	a.Do("DISCARD\r\n")
	if after := totMem(); queued-after < 2000*200 {
		t.Fatalf("tot-mem %d after DISCARD (%d queued); want the copies given back", after, queued)
	}
}

package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/compat"
)

// TestSpringScriptRefusedAtTheMemoryLimitWritesNothing: at the memory
// limit with room for one new key, Spring's script, which writes two new
// keys (tokens, then timestamp), is refused with OOM and leaves neither
// key: a run is all or nothing, so a limiter never sees tokens without the
// instant they were counted at.
func TestSpringScriptRefusedAtTheMemoryLimitWritesNothing(t *testing.T) {
	st := New(1)
	st.SetMaxMemory(16<<10, NoEviction)
	// Fill the shard with keys as long as the script's until one is
	// refused, then free one: room for exactly one such key.
	const name = "request_rate_limiter.{%06d}.tokens"
	n := 0
	for ; n < 100_000; n++ {
		if got := exec(st, t0, setOp, []string{fmt.Sprintf(name, n)}, "12345"); strings.HasPrefix(got, "(error) OOM") {
			break
		}
	}
	if n == 0 || n == 100_000 {
		t.Fatalf("%d keys before the first OOM; want the limit reached after some", n)
	}
	if d, _ := st.Delete(t0, [][]byte{[]byte(fmt.Sprintf(name, 0))}); d != 1 {
		t.Fatal("could not free a key")
	}
	keys := []string{"request_rate_limiter.{zzzzzz}.tokens", "request_rate_limiter.{zzzzzz}.tmstmp"}
	got := exec(st, t0, script(compat.SpringSHA1v430), keys, "1", "10", "", "1")
	if !strings.HasPrefix(got, "(error) OOM") {
		t.Fatalf("Spring's script with room for one of its two keys = %s; want OOM", got)
	}
	if e, _ := st.Exists(t0, [][]byte{[]byte(keys[0]), []byte(keys[1])}); e != 0 {
		t.Fatalf("after the refused run EXISTS tokens timestamp = %d; want 0 (nothing written)", e)
	}
	// The room is still there: one key fits.
	if got := exec(st, t0, setOp, keys[:1], "1"); got != "OK" {
		t.Fatalf("SET of one key after the refused run = %s; want OK", got)
	}
}

// TestExecBatchRunsInOrderAsOneAOFFrame: a pipeline's script calls and
// string commands carried out by one ExecBatch see each other's writes in
// order, and are one frame of the append-only log, which recovery replays
// to the same keys.
func TestExecBatchRunsInOrderAsOneAOFFrame(t *testing.T) {
	st, a, path := openLog(t, FsyncAlways)
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i := range s {
			out[i] = []byte(s[i])
		}
		return out
	}
	incr := script(compat.UluleIncrSHA1)
	ops := []compat.TxOp{
		{Op: incr, Keys: b("u"), Argv: b("1", "60000")},
		{Op: incr, Keys: b("u"), Argv: b("1", "60000")},
		{Op: compat.Op{Cmd: compat.CmdSet}, Keys: b("s"), Argv: b("x")},
		{Op: compat.Op{Cmd: compat.CmdIncrBy}, Keys: b("s"), Argv: b("1")}, // an error, alone
		{Op: compat.Op{Cmd: compat.CmdGet}, Keys: b("u")},
	}
	var c compat.Call
	st.ExecBatch(t0, ops, &c)
	want := []string{"[1 60000]", "[2 60000]", "OK", "(error) " + compat.ErrNotInteger.Error(), `"2"`}
	for i := range ops {
		if got := ops[i].Reply.String(); got != want[i] {
			t.Fatalf("op %d = %s; want %s", i, got, want[i])
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got, l := loadLog(t, path, AOFLoadOptions{})
	if l.Frames != 1 {
		t.Fatalf("the log holds %d frames; want 1 for the batch", l.Frames)
	}
	if v := exec(got, t0, compat.Op{Cmd: compat.CmdGet}, []string{"u"}); v != `"2"` {
		t.Fatalf("u after recovery = %s; want \"2\"", v)
	}
}

// TestExecBatchOfManyKeysMatchesOneByOne: a batch naming more keys than
// ExecBatch keeps hashes for (one-key and two-key calls, keys named again
// later, a call whose keys straddle the 64th) gives the replies and leaves
// the keys that the same calls give one Exec at a time.
func TestExecBatchOfManyKeysMatchesOneByOne(t *testing.T) {
	spring := script(compat.SpringSHA1v430)
	incr := script(compat.UluleIncrSHA1)
	var ops []compat.TxOp
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i := range s {
			out[i] = []byte(s[i])
		}
		return out
	}
	ops = append(ops, compat.TxOp{Op: incr, Keys: b("u:0"), Argv: b("1", "60000")})
	for i := 0; i < 60; i++ {
		id := fmt.Sprint(i % 23)
		ops = append(ops, compat.TxOp{Op: spring, Keys: b("rl.{"+id+"}.tokens", "rl.{"+id+"}.timestamp"),
			Argv: b("10", "20", "", "3")})
		if i%7 == 0 {
			ops = append(ops, compat.TxOp{Op: incr, Keys: b("u:" + fmt.Sprint(i%3)), Argv: b("1", "60000")})
		}
	}
	batch, single := New(8), New(8)
	var c compat.Call
	batch.ExecBatch(t0, ops, &c)
	for i := range ops {
		c.Argv = ops[i].Argv
		single.Exec(t0, ops[i].Op, ops[i].Keys, &c)
		if got, want := ops[i].Reply.String(), c.Reply.String(); got != want {
			t.Fatalf("call %d in the batch = %s; one at a time %s", i, got, want)
		}
	}
	for i := range ops {
		for _, k := range ops[i].Keys {
			got := exec(batch, t0, compat.Op{Cmd: compat.CmdGet}, []string{string(k)})
			want := exec(single, t0, compat.Op{Cmd: compat.CmdGet}, []string{string(k)})
			if got != want {
				t.Fatalf("GET %s after the batch = %s; one at a time %s", k, got, want)
			}
		}
	}
}

// BenchmarkExecBatchSpring is a batch of 16 calls of Spring's script on
// 16 buckets (two keys each), the way a pipeline of EVALSHA reaches the
// store.
func BenchmarkExecBatchSpring(b *testing.B) {
	st := New(8)
	spring := script(compat.SpringSHA1v430)
	ops := make([]compat.TxOp, 16)
	for i := range ops {
		id := fmt.Sprint(i)
		ops[i] = compat.TxOp{Op: spring,
			Keys: [][]byte{[]byte("rl.{" + id + "}.tokens"), []byte("rl.{" + id + "}.timestamp")},
			Argv: [][]byte{[]byte("1000"), []byte("100000"), []byte(""), []byte("1")}}
	}
	var c compat.Call
	st.ExecBatch(t0, ops, &c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(ops) {
		st.ExecBatch(t0+int64(i), ops, &c)
	}
}

// BenchmarkExecBatchSpring100kKeys is BenchmarkExecBatchSpring over
// 100,000 buckets (200,000 keys, far more than the caches hold), 16 random
// buckets a batch, as a server's pipelines of EVALSHA reach the store.
func BenchmarkExecBatchSpring100kKeys(b *testing.B) {
	st := New(4)
	spring := script(compat.SpringSHA1v430)
	const nbuckets = 100_000
	all := make([]compat.TxOp, nbuckets)
	argv := [][]byte{[]byte("1000"), []byte("100000"), []byte(""), []byte("1")}
	for i := range all {
		id := fmt.Sprintf("%08d", i)
		all[i] = compat.TxOp{Op: spring, Argv: argv,
			Keys: [][]byte{[]byte("rl.{" + id + "}.tokens"), []byte("rl.{" + id + "}.timestamp")}}
	}
	var c compat.Call
	for i := 0; i < nbuckets; i += 16 {
		st.ExecBatch(t0, all[i:min(i+16, nbuckets)], &c)
	}
	batch := make([]compat.TxOp, 16)
	x := xorshift(88172645463325252)
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch) {
		for j := range batch {
			batch[j] = all[x.next()%nbuckets]
		}
		now += 1000
		st.ExecBatch(now, batch, &c)
	}
}

// BenchmarkExecSpringOneByOne is BenchmarkExecBatchSpring's calls made
// one Exec at a time, as a script call ran before calls were deferred.
func BenchmarkExecSpringOneByOne(b *testing.B) {
	st := New(8)
	spring := script(compat.SpringSHA1v430)
	ops := make([]compat.TxOp, 16)
	for i := range ops {
		id := fmt.Sprint(i)
		ops[i] = compat.TxOp{Op: spring,
			Keys: [][]byte{[]byte("rl.{" + id + "}.tokens"), []byte("rl.{" + id + "}.timestamp")},
			Argv: [][]byte{[]byte("1000"), []byte("100000"), []byte(""), []byte("1")}}
	}
	var c compat.Call
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op := &ops[i%len(ops)]
		c.Argv = op.Argv
		st.Exec(t0+int64(i), op.Op, op.Keys, &c)
	}
}

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

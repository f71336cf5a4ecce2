package commands

import (
	"strings"
	"testing"
)

// RL.CHECK's cost beside RL.TOKEN's, on the handler path without a socket
// (handler_bench_test.go): a pipeline of 16 decisions on 16 keys under a
// TOKEN policy with the parameters BenchmarkCmdToken passes inline.

// checkBatch returns a connection with the policy "api" defined and a
// batch of 16 RL.CHECK on 16 subjects.
func checkBatch(tb testing.TB) (func(), []byte) {
	c := loopback(tb)
	feed(tb, c, []byte(frame("RL.POLICY", "SET", "api", "TOKEN", "1000/s", "100000")))
	var batch strings.Builder
	for i := 0; i < benchBatch; i++ {
		batch.WriteString(frame("RL.CHECK", "api", key(i)))
	}
	in := []byte(batch.String())
	return func() { feed(tb, c, in) }, in
}

func BenchmarkCmdCheck(b *testing.B) {
	run, _ := checkBatch(b)
	for i := 0; i < 64; i++ { // warm up: keys, buffers, the key arena
		run()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += benchBatch {
		run()
	}
}

// TestCheckDoesNotAllocate holds a pipeline of RL.CHECK to zero heap
// allocations per decision once the connection's buffers have grown: the
// policy is looked up without a lock or a copy, and the derived keys are
// built in the queue's arena.
func TestCheckDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	run, _ := checkBatch(t)
	run()
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Fatalf("a batch of 16 RL.CHECK allocates %.1f times; want 0", allocs)
	}
}

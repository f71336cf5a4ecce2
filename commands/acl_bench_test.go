package commands

import (
	"testing"

	"github.com/sluice-rl/sluice/server"
)

// The cost of the ACL check on the hot path: the default user (allcommands
// allkeys) pays one atomic load and a branch; a user held to a key prefix
// pays a glob match per key. Compare with BenchmarkHandlerTokenP16.

// restricted returns a loopback connection authenticated as a user allowed
// @limiter on ~user:*, the keys pipeline uses.
func restricted(tb testing.TB) *server.Conn {
	tb.Helper()
	c := loopback(tb)
	feed(tb, c, []byte(frame("ACL", "SETUSER", "tenant", "on", ">pw", "~user:*", "+@limiter", "+@connection")))
	feed(tb, c, []byte(frame("AUTH", "tenant", "pw")))
	return c
}

func BenchmarkHandlerTokenP16RestrictedUser(b *testing.B) {
	c := restricted(b)
	batch := pipeline(16, 1000, "RL.TOKEN")
	feed(b, c, batch)
	b.ReportAllocs()
	b.SetBytes(int64(len(batch) / 16))
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		feed(b, c, batch)
	}
}

// TestACLCheckDoesNotAllocate: a restricted user's pipelined RL.TOKEN, its
// keys matched against its pattern, allocates nothing either.
func TestACLCheckDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation count is measured in full runs")
	}
	c := restricted(t)
	batch := pipeline(16, 16, "RL.TOKEN")
	run := func() { feed(t, c, batch) }
	run()
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Fatalf("a restricted user's batch of 16 RL.TOKEN allocates %.1f times; want 0", allocs)
	}
}

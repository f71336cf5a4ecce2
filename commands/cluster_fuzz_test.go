package commands

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/resp"
	"github.com/sluice-rl/sluice/store"
)

// FuzzClusterCommand sends CLUSTER and the META.* commands with fuzzed
// arguments (split on spaces) to a node with keys in its store: every
// line gets exactly one well-formed reply, and none changes a key.
func FuzzClusterCommand(f *testing.F) {
	for _, seed := range []string{
		"CLUSTER KEYSLOT {a}b", "CLUSTER COUNTKEYSINSLOT 15495", "CLUSTER GETKEYSINSLOT 15495 10",
		"CLUSTER GETKEYSINSLOT 0 -1", "CLUSTER COUNTKEYSINSLOT 16384", "CLUSTER SLOTS", "CLUSTER SHARDS x",
		"CLUSTER PROXIED", "CLUSTER HELP", "CLUSTER NODES", "CLUSTER MYID", "CLUSTER INFO", "CLUSTER SETSLOT 1 NODE x",
		"META.MEMBERS", "META.JOIN a b c NONVOTER", "META.FORWARD x", "META.REMOVE a", "META.TRANSFER", "RAFT.FORWARD x",
		"CLUSTER GETKEYSINSLOT 99999999999999999999 1", "CLUSTER KEYSLOT", "CLUSTER",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		if len(args) == 0 {
			return
		}
		st := store.New(2)
		_, c := loopbackOn(t, DefaultConfig(), st)
		if out, _ := c.Feed([]byte(frame("RL.TOKEN", "a", "1/h", "5"))); !bytes.HasPrefix(out, []byte("*5")) {
			t.Fatalf("RL.TOKEN: %q", out)
		}
		out, _ := c.Feed([]byte(frame(args...)))
		r := bufio.NewReader(bytes.NewReader(out))
		if err := resp.Read(r, new(resp.Value)); err != nil && !bytes.HasPrefix(out, []byte("-")) {
			t.Fatalf("%q: reply %q: %v", line, out, err)
		}
		if r.Buffered() != 0 {
			t.Fatalf("%q: %q is more than one reply", line, out)
		}
		if n, _ := st.DBSize(c.Now()); n != 1 {
			t.Fatalf("%q: %d keys after it; want 1", line, n)
		}
	})
}

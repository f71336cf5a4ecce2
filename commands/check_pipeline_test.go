package commands

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/resp"
	"github.com/sluice-rl/sluice/server"
	"github.com/sluice-rl/sluice/store"
)

// A pipeline's RL.CHECKs look their policies up together when the queue
// is carried out; these tests hold them to the answers of RL.CHECKs sent
// one at a time: every reply in command order, each refusal in its place
// and nothing applied for it, a policy changed in the pipeline seen by the
// checks after the change only, and the ACL's refusal of a derived key.

// replies feeds one batch to c and returns its replies, rendered.
func replies(t *testing.T, c *server.Conn, cmds ...[]string) []string {
	t.Helper()
	var in strings.Builder
	for _, cmd := range cmds {
		in.WriteString(frame(cmd...))
	}
	out, closed := c.Feed([]byte(in.String()))
	if closed {
		t.Fatalf("the connection closed: %q", out)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	got := make([]string, len(cmds))
	for i := range got {
		var v resp.Value
		if err := resp.Read(r, &v); err != nil {
			t.Fatalf("reply %d of %d: %v (output %q)", i+1, len(cmds), err, out)
		}
		got[i] = v.String()
	}
	if r.Buffered() != 0 {
		t.Fatalf("%d bytes after %d replies", r.Buffered(), len(cmds))
	}
	return got
}

// decided is the start of a decision's rendered reply: admitted or not,
// limit and remaining (retry and reset follow, which the real clock moves).
func decided(allowed bool, limit, remaining int) string {
	a := 0
	if allowed {
		a = 1
	}
	return fmt.Sprintf("*5[:%d :%d :%d ", a, limit, remaining)
}

func expectReplies(t *testing.T, got, want []string) {
	t.Helper()
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("reply %d = %s; want %s…", i+1, got[i], want[i])
		}
	}
}

func TestCheckPipelineAnswersInOrderWithRefusalsInPlace(t *testing.T) {
	_, c := loopbackOn(t, DefaultConfig(), store.New(4))
	expectReplies(t, replies(t, c,
		[]string{"RL.POLICY", "SET", "free", "TOKEN", "1/h", "10"},
		[]string{"RL.POLICY", "SET", "jobs", "CONCURRENCY", "5", "30s"},
	), []string{"+OK", "+OK"})

	noSuch := "-ERR no such policy 'nope'"
	concurrency := "-ERR " + string(errCheckConcurrency)
	got := replies(t, c,
		[]string{"RL.CHECK", "free", "a"},
		[]string{"RL.CHECK", "nope", "a"},
		[]string{"RL.CHECK", "jobs", "a"},
		[]string{"RL.CHECK", "free", "b", "3"},
		[]string{"RL.TOKEN", "plain", "1/h", "4"},
		[]string{"RL.CHECK", "free", "a", "2"},
		[]string{"RL.CHECK", "nope", "b"},
		// The change answers after the checks before it, which were
		// decided under the old policy; the checks after it see the new.
		[]string{"RL.POLICY", "SET", "free", "TOKEN", "1/h", "20"},
		[]string{"RL.CHECK", "free", "c"},
		[]string{"RL.CHECK", "free", "a", "0"},
	)
	expectReplies(t, got, []string{
		decided(true, 10, 9), noSuch, concurrency, decided(true, 10, 7), decided(true, 4, 3),
		decided(true, 10, 7), noSuch, "+OK", decided(true, 20, 19), decided(true, 20, 17),
	})

	// More checks than are looked up together, with refusals among them:
	// every fifth names no policy, and nothing is taken for it.
	var cmds [][]string
	var want []string
	left := map[string]int{}
	for i := 0; i < 45; i++ {
		sub := fmt.Sprintf("s%d", i%7)
		if i%5 == 4 {
			cmds = append(cmds, []string{"RL.CHECK", "nope", sub})
			want = append(want, noSuch)
			continue
		}
		if _, ok := left[sub]; !ok {
			left[sub] = 20
		}
		left[sub]--
		cmds = append(cmds, []string{"RL.CHECK", "free", sub})
		want = append(want, decided(true, 20, left[sub]))
	}
	expectReplies(t, replies(t, c, cmds...), want)
}

func TestCheckPipelineRefusesADerivedKeyTheUserMayNotReachInPlace(t *testing.T) {
	_, c := loopbackOn(t, DefaultConfig(), store.New(4))
	expectReplies(t, replies(t, c,
		[]string{"RL.POLICY", "SET", "free", "TOKEN", "1/h", "10"},
		[]string{"ACL", "SETUSER", "a", "on", ">pa", "~pol:*:tenant-a:*", "+@limiter", "+@policy", "+@connection"},
		[]string{"AUTH", "a", "pa"},
	), []string{"+OK", "+OK", "+OK"})
	noPerm := "-NOPERM this user has no permissions to access one of the keys used as arguments"
	got := replies(t, c,
		[]string{"RL.CHECK", "free", "tenant-a:1"},
		[]string{"RL.CHECK", "free", "tenant-b:1"},
		[]string{"RL.CHECK", "free", "tenant-a:1"},
		[]string{"RL.CHECK", "free", "tenant-b:1", "0"},
		[]string{"RL.CHECK", "free", "tenant-a:2", "5"},
	)
	expectReplies(t, got, []string{decided(true, 10, 9), noPerm, decided(true, 10, 8), noPerm, decided(true, 10, 5)})
}

// Pipelines that alternate policies, within a batch and from one batch to
// the next, keep each policy's state and overrides under its own keys: a
// check builds its keys from the last policy's when it repeats it, and a
// batch that starts with the policy the previous one ended with rebuilds
// them.
func TestCheckPipelinesAlternatingPoliciesKeepTheirOwnState(t *testing.T) {
	_, c := loopbackOn(t, DefaultConfig(), store.New(4))
	expectReplies(t, replies(t, c,
		[]string{"RL.POLICY", "SET", "a", "TOKEN", "1/h", "10"},
		[]string{"RL.POLICY", "SET", "b:long.name", "TOKEN", "1/h", "20"},
		[]string{"RL.OVERRIDE", "SET", "b:long.name", "u2", "DENY"},
		[]string{"RL.OVERRIDE", "SET", "a", "u3", "TOKEN", "1/h", "5"},
	), []string{"+OK", "+OK", "+OK", "+OK"})
	got := replies(t, c,
		[]string{"RL.CHECK", "a", "u1"},
		[]string{"RL.CHECK", "a", "u1"},
		[]string{"RL.CHECK", "b:long.name", "u1"},
		[]string{"RL.CHECK", "b:long.name", "u2"},
		[]string{"RL.CHECK", "a", "u3"},
		[]string{"RL.CHECK", "a", "subject-longer-than-the-rest"},
	)
	expectReplies(t, got, []string{
		decided(true, 10, 9), decided(true, 10, 8), decided(true, 20, 19), decided(false, 20, 0),
		decided(true, 5, 4), decided(true, 10, 9),
	})
	got = replies(t, c,
		[]string{"RL.CHECK", "a", "u2"},
		[]string{"RL.CHECK", "a", "u3"},
		[]string{"RL.CHECK", "b:long.name", "u1"},
		[]string{"RL.CHECK", "b:long.name", "u3"},
		[]string{"RL.CHECK", "b:long.name", "u2"},
	)
	expectReplies(t, got, []string{
		decided(true, 10, 9), decided(true, 5, 3), decided(true, 20, 18), decided(true, 20, 19), decided(false, 20, 0),
	})
	got = replies(t, c,
		[]string{"RL.CHECK", "b:long.name", "u1"},
		[]string{"RL.CHECK", "a", "u1"},
		[]string{"EXISTS", "pol:a:token:u1", "pol:b%3Along.name:token:u1", "pol:b%3Along.name:token:u3", "pol:a:token:u3"},
	)
	expectReplies(t, got, []string{decided(true, 20, 17), decided(true, 10, 7), ":4"})

	// A batch of many checks under the policy the one before ended with:
	// its keys fill the memory the previous batch's keys were built in.
	expectReplies(t, replies(t, c, []string{"RL.CHECK", "b:long.name", "u9"}, []string{"RL.CHECK", "a", "u9"}),
		[]string{decided(true, 20, 19), decided(true, 10, 9)})
	var cmds [][]string
	var want []string
	exists := []string{"EXISTS"}
	for i := 0; i < 12; i++ {
		cmds = append(cmds, []string{"RL.CHECK", "a", fmt.Sprintf("s%d", i)})
		want = append(want, decided(true, 10, 9))
		exists = append(exists, fmt.Sprintf("pol:a:token:s%d", i))
	}
	expectReplies(t, replies(t, c, cmds...), want)
	expectReplies(t, replies(t, c, exists), []string{":12"})
}

// While the store has never held an override, RL.CHECK's requests name
// none; the first override set, in the same pipeline or another batch,
// decides every check queued after it.
func TestCheckSeesTheFirstOverrideOnceItIsSet(t *testing.T) {
	st := store.New(4)
	_, c := loopbackOn(t, DefaultConfig(), st)
	expectReplies(t, replies(t, c,
		[]string{"RL.POLICY", "SET", "p", "TOKEN", "1/h", "10"},
		[]string{"RL.CHECK", "p", "s"},
		[]string{"RL.CHECK", "p", "t"},
		[]string{"RL.OVERRIDE", "SET", "p", "s", "DENY"},
		[]string{"RL.CHECK", "p", "s"},
		[]string{"RL.CHECK", "p", "t"},
	), []string{"+OK", decided(true, 10, 9), decided(true, 10, 9), "+OK", decided(false, 10, 0), decided(true, 10, 8)})
	if !st.MayHoldOverrides() {
		t.Fatal("the store does not know it holds an override")
	}
	expectReplies(t, replies(t, c,
		[]string{"RL.CHECK", "p", "s"},
		[]string{"RL.OVERRIDE", "SET", "p", "u", "TOKEN", "1/h", "3"},
		[]string{"RL.CHECK", "p", "u"},
	), []string{decided(false, 10, 0), "+OK", decided(true, 3, 2)})
}

// A policy's request that names no override key, because none is held,
// is still a policy's: a limiter's state of another algorithm under its
// key starts afresh, as with an override key named, instead of failing
// with WRONGTYPE.
func TestCheckWithNoOverrideHeldStartsAfreshOverAnotherAlgorithmsState(t *testing.T) {
	st := store.New(4)
	_, c := loopbackOn(t, DefaultConfig(), st)
	expectReplies(t, replies(t, c,
		[]string{"RL.POLICY", "SET", "p", "FIXED", "5", "1h"},
		[]string{"RL.TOKEN", "pol:p:fixed:s", "1/h", "10"},
		[]string{"RL.CHECK", "p", "s"},
	), []string{"+OK", decided(true, 10, 9), decided(true, 5, 4)})
	if st.MayHoldOverrides() {
		t.Fatal("the store holds an override: the test does not exercise a check that names none")
	}
}

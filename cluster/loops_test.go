package cluster

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/internal/resp"
	"github.com/sluice-rl/sluice/internal/testutil"
	"github.com/sluice-rl/sluice/policy"
)

// A replicated node's event loops: decisions wait for their entry without
// blocking the loop, commands that wait otherwise run on a goroutine, and
// a pipeline mixing them is answered in command order, on the leader and
// on a follower (which forwards).
func TestPipelineOnEventLoopsAnswersInOrder(t *testing.T) {
	g := newGroup(t, 3)
	ld := g.leader()
	f := g.followersOf(ld)[0]
	for _, m := range []*member{ld, f} {
		if n := m.srv.EventLoops(); n != 2 {
			t.Fatalf("%s serves from %d event loops; want 2", m.id, n)
		}
		key := "order-" + m.id
		dec := "*5\r\n$8\r\nRL.FIXED\r\n$" + strconv.Itoa(len(key)) + "\r\n" + key + "\r\n$2\r\n10\r\n$2\r\n1h\r\n$1\r\n1\r\n"
		bad := "RL.FIXED " + key + " ten 1h\r\n"
		pipeline := dec + dec + dec + "EXISTS " + key + "\r\n" + dec + "PING\r\n" + bad + dec + "DEL " + key + "\r\n" + dec
		want := []string{"[:1 :10 :9 ", "[:1 :10 :8 ", "[:1 :10 :7 ", ":1", "[:1 :10 :6 ", "+PONG", "-ERR",
			"[:1 :10 :5 ", ":1", "[:1 :10 :9 "}
		cl := testutil.Dial(t, m.addr)
		for round := range 3 {
			cl.Send(pipeline)
			for i, w := range want {
				if got := cl.Reply(); !strings.HasPrefix(got, w) {
					t.Fatalf("%s, round %d: reply %d = %q; want %q…", m.id, round, i, got, w)
				}
			}
			cl.Do("DEL " + key + "\r\n")
		}
	}
	g.assertSameState()
}

// A command that waits for the decisions queued before it (on an event
// loop, the connection is suspended and the command read again once they
// are in) is logged once: one MONITOR line per command, and one ACL LOG
// count per denied command, on the leader and on a follower.
func TestCommandReadAgainIsLoggedOnce(t *testing.T) {
	g := newACLGroup(t, 3)
	ld := g.leader()
	f := g.followersOf(ld)[0]
	for _, m := range []*member{ld, f} {
		mon, cl := testutil.Dial(t, m.addr), testutil.Dial(t, m.addr)
		if got := mon.Do("MONITOR\r\n"); got != "+OK" {
			t.Fatalf("%s: MONITOR = %q; want +OK", m.id, got)
		}
		if got := cl.Do("ACL SETUSER lim-" + m.id + " on nopass ~ok* +@all\r\n"); got != "+OK" {
			t.Fatalf("%s: ACL SETUSER = %q; want +OK", m.id, got)
		}
		if got := cl.Do("AUTH lim-" + m.id + " x\r\n"); got != "+OK" {
			t.Fatalf("%s: AUTH = %q; want +OK", m.id, got)
		}
		// Each command but the first follows a queued decision: a refused
		// one (bad argument, denied key, arity) first has the queue decided.
		cmds := []string{"RL.FIXED ok1 10 1h 1", "RL.FIXED ok2 ten 1h", "RL.FIXED ok3 10 1h 1",
			"RL.FIXED denied1 10 1h 1", "RL.FIXED ok4 10 1h 1", "RL.FIXED ok5", "RL.FIXED ok6 10 1h 1",
			"RL.FIXED denied1 10 1h 1", "PING"}
		want := []string{"[:1 ", "-ERR", "[:1 ", "-NOPERM", "[:1 ", "-ERR wrong number", "[:1 ", "-NOPERM", "+PONG"}
		var pipeline []byte // multibulk: an inline command ends the batch
		for _, c := range cmds {
			pipeline = resp.AppendArgs(pipeline, bytes.Fields([]byte(c)))
		}
		cl.Send(string(pipeline))
		for i, w := range want {
			if got := cl.Reply(); !strings.HasPrefix(got, w) {
				t.Fatalf("%s: reply to %q = %q; want %q…", m.id, cmds[i], got, w)
			}
		}
		seen := map[string]int{}
		for seen[`"PING"`] == 0 {
			line := mon.Reply()
			if i := strings.Index(line, `] "`); i >= 0 && !strings.Contains(line, `"ACL"`) && !strings.Contains(line, `"AUTH"`) {
				seen[line[i+2:]]++
			}
		}
		for _, c := range cmds {
			quoted := `"` + strings.ReplaceAll(c, " ", `" "`) + `"`
			n := seen[quoted]
			if c == "RL.FIXED denied1 10 1h 1" {
				n /= 2 // sent twice
			}
			if n != 1 {
				t.Errorf("%s: MONITOR showed %q %d times per call; want 1 (all: %v)", m.id, c, n, seen)
			}
		}
		if got := cl.Do("ACL LOG 1\r\n"); !strings.Contains(got, "$count :2 ") || !strings.Contains(got, "$object $denied1") {
			t.Errorf("%s: ACL LOG 1 = %q; want the denied key's entry counted twice", m.id, got)
		}
		cl.Do("ACL LOG RESET\r\n")
	}
}

// TestPolicyCatchUpLeavesTheLoopServing: an RL.CHECK whose policy this
// node lacks catches its policies up first (Config.MetaSync, as a sharded
// node's meta replica does), which waits; meanwhile the one event loop
// that serves the client answers its other clients, and the RL.CHECK is
// decided under the policy once the catch-up brings it.
func TestPolicyCatchUpLeavesTheLoopServing(t *testing.T) {
	gate, asked := make(chan struct{}), make(chan struct{}, 16)
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	regs := map[string]*policy.Registry{}
	g := &group{t: t, loops: 1, setup: func(m *member, cfg *Config, ccfg *commands.Config) {
		regs[m.id] = policy.NewRegistry()
		cfg.Policies, ccfg.Policies = regs[m.id], regs[m.id]
		ccfg.MetaSync = func() error {
			asked <- struct{}{}
			select {
			case <-gate:
			case <-time.After(10 * time.Second):
			}
			return nil
		}
	}}
	newGroupOf(t, g, 3)
	ld := g.leader()
	for _, m := range g.members {
		for _, pairs := range []int{1, 2} {
			name := "late-" + m.id + "-" + strconv.Itoa(pairs)
			args := []string{"RL.CHECK"}
			for i := range pairs {
				args = append(args, name, "subj"+strconv.Itoa(i))
			}
			waiting, other := testutil.Dial(t, m.addr), testutil.Dial(t, m.addr)
			waiting.Send(string(resp.AppendArgs(nil, bytes.Fields([]byte(strings.Join(args, " "))))))
			select {
			case <-asked:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: %v never asked to catch up", m.id, args)
			}
			if got := other.Do("PING\r\n"); got != "+PONG" {
				t.Fatalf("%s: PING while another client's %v catches up = %q; want +PONG", m.id, args, got)
			}
			if got := other.Do("*5\r\n$8\r\nRL.FIXED\r\n$5\r\nfixed\r\n$2\r\n10\r\n$2\r\n1h\r\n$1\r\n1\r\n"); !strings.HasPrefix(got, "[:1 ") {
				t.Fatalf("%s: RL.FIXED while another client's %v catches up = %q; want admitted", m.id, args, got)
			}
			if got := testutil.Dial(t, ld.addr).Do("RL.POLICY SET " + name + " TOKEN 1/h 5\r\n"); got != "+OK" {
				t.Fatalf("RL.POLICY SET %s = %q; want +OK", name, got)
			}
			for deadline := time.Now().Add(5 * time.Second); regs[m.id].Policy([]byte(name)) == nil; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: policy %s not applied within 5 s", m.id, name)
				}
			}
			gate <- struct{}{}
			if got := waiting.Reply(); !strings.HasPrefix(got, "[:1 ") {
				t.Fatalf("%s: %v after the catch-up = %q; want admitted", m.id, args, got)
			}
		}
	}
}

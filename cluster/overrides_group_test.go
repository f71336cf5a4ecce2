package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
)

// Overrides in a replicated group, through the Node API the commands use:
// RL.OVERRIDE SET is Node.SetOverride, RL.OVERRIDE DEL is Node.Delete of
// the override key, and RL.CHECK is Node.Decide with a request that names
// the override key.

// The policy of these tests: api = TOKEN capacity 3, one token an hour (no
// refill while a test runs).
var apiLimit = algorithms.Limit{Algo: algorithms.Token, Count: 3, Period: int64(time.Hour)}

func ovrKey(subject string) []byte { return policy.AppendOverrideKey(nil, "api", []byte(subject)) }

// checkOn decides one unit for subject under api through m, as RL.CHECK
// api subject does, and fails the test on an error.
func checkOn(t *testing.T, m *member, subject string) algorithms.Result {
	t.Helper()
	reqs := []algorithms.Request{{Key: policy.AppendCheckKey(nil, "api", algorithms.Token, []byte(subject)),
		Limit: apiLimit, N: 1, Override: ovrKey(subject)}}
	out := make([]algorithms.Outcome, 1)
	m.node.Decide(time.Now().UnixNano(), reqs, out)
	if out[0].Err != nil {
		t.Fatalf("RL.CHECK api %s through %s: %v", subject, m.id, out[0].Err)
	}
	return out[0].Result
}

// followersOf returns the running members other than ld.
func (g *group) followersOf(ld *member) []*member {
	var fs []*member
	for _, m := range g.members {
		if m != ld && m.node != nil {
			fs = append(fs, m)
		}
	}
	return fs
}

// expectOverrides fails unless every running member's own store holds
// exactly want (subject → words) among subjects.
func (g *group) expectOverrides(subjects []string, want map[string][3]int64) {
	g.t.Helper()
	g.converged()
	for _, m := range g.members {
		if m.node == nil {
			continue
		}
		for _, s := range subjects {
			w, ok := m.node.LocalOverride(0, ovrKey(s))
			if ww, should := want[s]; ok != should || w != ww {
				g.t.Fatalf("%s's store holds override %v (%v) for %s; want %v (%v)", m.id, w, ok, s, ww, should)
			}
		}
	}
}

// TestGroupDecidesWithOverridesSetThroughAFollower: overrides set through
// a follower reach every replica through the log; decisions through the
// leader and through a follower (forwarded, its result decoded from the
// leader's reply) are decided with them; a follower that missed them and
// is brought up to date by an installed snapshot has them; and deleting
// one through the group makes the policy's limit apply again.
func TestGroupDecidesWithOverridesSetThroughAFollower(t *testing.T) {
	g := newGroup(t, 3)
	ld := g.leader()
	fs := g.followersOf(ld)
	f1, f2 := fs[0], fs[1]
	now := time.Now().UnixNano()
	words := map[string][3]int64{
		"abc":  overrideWords(t, policy.Override{Kind: policy.OverrideUnlimited}),
		"evil": overrideWords(t, policy.Override{Kind: policy.OverrideDeny}),
		"gold": overrideWords(t, policy.Override{Kind: policy.OverrideLimit,
			Limit: algorithms.Limit{Algo: algorithms.Token, Count: 7, Period: int64(time.Hour)}}),
	}
	subjects := []string{"abc", "evil", "gold", "late", "joe"}
	for _, s := range []string{"abc", "evil", "gold"} {
		if created, err := f1.node.SetOverride(now, ovrKey(s), words[s]); err != nil || !created {
			t.Fatalf("SetOverride %s through follower %s: created %v, %v", s, f1.id, created, err)
		}
	}
	if created, err := f2.node.SetOverride(now, ovrKey("abc"), words["abc"]); err != nil || created {
		t.Fatalf("SetOverride abc again through %s: created %v, %v; want an update", f2.id, created, err)
	}
	g.expectOverrides(subjects, map[string][3]int64{"abc": words["abc"], "evil": words["evil"], "gold": words["gold"]})

	through := []*member{ld, f1, f2, f1, ld, f2, f2, f1, ld} // leader and followers in turn
	for i, m := range through {
		// UNLIMITED: always admitted, not counted; remaining is the
		// policy's whole limit.
		if r := checkOn(t, m, "abc"); !r.Allowed || r.Override != algorithms.OverrideUnlimited || r.Limit != 3 || r.Remaining != 3 {
			t.Fatalf("call %d: abc (UNLIMITED) through %s = %+v; want admitted, override unlimited, 3 of 3", i, m.id, r)
		}
		// DENY: always refused, never retryable.
		if r := checkOn(t, m, "evil"); r.Allowed || r.Override != algorithms.OverrideDeny || r.RetryAfter != algorithms.NeverNS {
			t.Fatalf("call %d: evil (DENY) through %s = %+v; want refused, override deny, retry -1", i, m.id, r)
		}
		// A limit override: its count is the limit, on one replicated
		// state.
		r := checkOn(t, m, "gold")
		left := int64(max(6-i, 0))
		if r.Override != algorithms.OverrideLimit || r.Limit != 7 || r.Allowed != (i < 7) || r.Remaining != left {
			t.Fatalf("call %d: gold (TOKEN 7) through %s = %+v; want override limit, limit 7, allowed %v, remaining %d",
				i, m.id, r, i < 7, left)
		}
	}
	// No override: the policy's limit.
	for i, m := range through[:4] {
		r := checkOn(t, m, "joe")
		if r.Override != algorithms.OverrideNone || r.Limit != 3 || r.Allowed != (i < 3) || r.Remaining != int64(max(2-i, 0)) {
			t.Fatalf("call %d: joe (no override) through %s = %+v", i, m.id, r)
		}
	}
	if n, err := f2.node.Exists(now, [][]byte{policy.AppendCheckKey(nil, "api", algorithms.Token, []byte("abc"))}); err != nil || n != 0 {
		t.Fatalf("EXISTS of abc's state = %d, %v; an UNLIMITED subject is not counted", n, err)
	}
	g.assertSameState()

	// f2 misses an override and decisions; the leader snapshots and keeps
	// one entry of its log, so f2 can only catch up by installing the
	// snapshot.
	if snaps, _ := f2.snaps.List(); len(snaps) != 0 {
		t.Fatalf("%s holds %d snapshots before the test makes one", f2.id, len(snaps))
	}
	g.stop(f2)
	words["late"] = overrideWords(t, policy.Override{Kind: policy.OverrideDeny})
	if _, err := f1.node.SetOverride(now, ovrKey("late"), words["late"]); err != nil {
		t.Fatal(err)
	}
	if r := checkOn(t, f1, "late"); r.Override != algorithms.OverrideDeny || r.Allowed {
		t.Fatalf("late (DENY) through %s = %+v", f1.id, r)
	}
	cur := g.leader() // ld, unless an election under load moved the lead
	rc := cur.node.raft.ReloadableConfig()
	rc.TrailingLogs = 1
	if err := cur.node.raft.ReloadConfig(rc); err != nil {
		t.Fatal(err)
	}
	if err := cur.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	g.start(f2)
	deadline := time.Now().Add(15 * time.Second)
	for f2.node.raft.Stats()["last_snapshot_index"] == "0" {
		if time.Now().After(deadline) {
			t.Fatalf("%s installed no snapshot within 15s", f2.id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.expectOverrides(subjects, words)
	g.assertSameState()
	// f2 decides with what the snapshot gave it, through the leader.
	if r := checkOn(t, f2, "late"); r.Allowed || r.Override != algorithms.OverrideDeny || r.RetryAfter != algorithms.NeverNS {
		t.Fatalf("late (DENY) through the restored %s = %+v", f2.id, r)
	}
	if r := checkOn(t, f2, "abc"); !r.Allowed || r.Override != algorithms.OverrideUnlimited {
		t.Fatalf("abc (UNLIMITED) through the restored %s = %+v", f2.id, r)
	}

	// DEL through the group: the policy's limit applies again, on the
	// state the subject has (gold's bucket is empty) or afresh (abc was
	// never counted).
	for _, s := range []string{"abc", "evil", "gold"} {
		if n, err := f2.node.Delete(now, [][]byte{ovrKey(s)}); err != nil || n != 1 {
			t.Fatalf("DEL %s's override through %s = %d, %v; want 1", s, f2.id, n, err)
		}
		delete(words, s)
	}
	g.expectOverrides(subjects, words)
	if r := checkOn(t, f1, "abc"); !r.Allowed || r.Override != algorithms.OverrideNone || r.Limit != 3 || r.Remaining != 2 {
		t.Fatalf("abc after DEL through %s = %+v; want admitted by the policy, 2 of 3 left", f1.id, r)
	}
	if r := checkOn(t, f2, "evil"); !r.Allowed || r.Override != algorithms.OverrideNone || r.Limit != 3 || r.Remaining != 2 {
		t.Fatalf("evil after DEL through %s = %+v; want admitted by the policy, 2 of 3 left", f2.id, r)
	}
	if r := checkOn(t, ld, "gold"); r.Allowed || r.Override != algorithms.OverrideNone || r.Limit != 3 {
		t.Fatalf("gold after DEL through %s = %+v; want refused by the policy's limit 3 on its empty bucket", ld.id, r)
	}
	g.assertSameState()
}

// TestSetOverrideThroughAFollowerIsInForceThereWhenItReturns: a follower
// that forwarded RL.OVERRIDE SET answers once its own replica holds the
// override, as for RL.POLICY SET, so that the same client's next
// RL.OVERRIDE LIST, or RL.CHECK's named reply (whose quota is read from
// this node's replica), on that node sees it.
func TestSetOverrideThroughAFollowerIsInForceThereWhenItReturns(t *testing.T) {
	g := newGroup(t, 3)
	f := g.followersOf(g.leader())[0]
	w := overrideWords(t, policy.Override{Kind: policy.OverrideLimit,
		Limit: algorithms.Limit{Algo: algorithms.Token, Count: 7, Period: int64(time.Hour)}})
	for i := 0; i < 5; i++ {
		s := fmt.Sprintf("s%d", i)
		if _, err := f.node.SetOverride(time.Now().UnixNano(), ovrKey(s), w); err != nil {
			t.Fatal(err)
		}
		if got, ok := f.node.LocalOverride(0, ovrKey(s)); !ok || got != w {
			t.Fatalf("SetOverride %s through %s returned; its replica holds %v (%v)", s, f.id, got, ok)
		}
	}
}

// checkReq is RL.CHECK api subject's request.
func checkReq(subject string) algorithms.Request {
	return algorithms.Request{Key: policy.AppendCheckKey(nil, "api", algorithms.Token, []byte(subject)),
		Limit: apiLimit, N: 1, Override: ovrKey(subject)}
}

// TestGroupTransactionAndExpiryWithOverrides: RL.CHECKs queued in MULTI on
// a follower are one tx op of the log, decided at EXEC with the overrides
// in force then (their kinds carried back in the forwarded results); RL.CHECK
// pairs (a group) through it are all or nothing around a DENY or UNLIMITED
// member; an override with an expiry ends at the log's time, on every
// replica alike.
func TestGroupTransactionAndExpiryWithOverrides(t *testing.T) {
	g := newGroup(t, 3)
	f := g.followersOf(g.leader())[0]
	now := time.Now().UnixNano()
	set := func(subject string, o policy.Override) {
		t.Helper()
		if _, err := f.node.SetOverride(now, ovrKey(subject), overrideWords(t, o)); err != nil {
			t.Fatal(err)
		}
	}
	set("abc", policy.Override{Kind: policy.OverrideUnlimited})
	set("evil", policy.Override{Kind: policy.OverrideDeny})
	set("gold", policy.Override{Kind: policy.OverrideLimit, Limit: algorithms.Limit{Algo: algorithms.Fixed, Count: 9, Period: int64(24 * time.Hour)}})
	// Expires 1.5 s from now, whatever the clock of the node applying it.
	set("brief", policy.Override{Kind: policy.OverrideDeny, Expire: now + int64(1500*time.Millisecond)})

	reqs := []algorithms.Request{checkReq("abc"), checkReq("evil"), checkReq("gold"), checkReq("joe"), checkReq("brief")}
	out := make([]algorithms.Outcome, len(reqs))
	// WATCH an override key: unchanged, so EXEC carries the decisions out.
	v, err := f.node.Version(now, ovrKey("abc"))
	if err != nil {
		t.Fatal(err)
	}
	watch := []algorithms.Watch{{Key: ovrKey("abc"), Version: v}}
	ok, err := f.node.Transact(time.Now().UnixNano(), watch, reqs, out, nil)
	if err != nil || !ok {
		t.Fatalf("EXEC through %s: %v, %v", f.id, ok, err)
	}
	for i, want := range []struct {
		kind    algorithms.OverrideKind
		allowed bool
		limit   int64
	}{{algorithms.OverrideUnlimited, true, 3}, {algorithms.OverrideDeny, false, 3}, {algorithms.OverrideLimit, true, 9},
		{algorithms.OverrideNone, true, 3}, {algorithms.OverrideDeny, false, 3}} {
		r := out[i]
		if r.Err != nil || r.Result.Override != want.kind || r.Result.Allowed != want.allowed || r.Result.Limit != want.limit {
			t.Fatalf("EXEC decision %d (%s) = %+v; want override %v, allowed %v, limit %d",
				i, reqs[i].Override, r, want.kind, want.allowed, want.limit)
		}
	}
	// RL.CHECK pairs (one all-or-nothing group) through the follower: a
	// DENY member charges nobody; an UNLIMITED member lets the group be
	// carried out without being counted itself.
	for _, c := range []struct{ other, want string }{
		{"evil", "true 3 3 none | false 3 0 deny"},
		{"abc", "true 3 2 none | true 3 3 unlimited"},
	} {
		group := []algorithms.Request{checkReq("pair"), checkReq(c.other)}
		group[0].Group, group[1].Group = 1, 1
		f.node.Decide(time.Now().UnixNano(), group, out[:2])
		got := ""
		for i, o := range out[:2] {
			if o.Err != nil {
				t.Fatalf("pair with %s through %s: %v", c.other, f.id, o.Err)
			}
			if i > 0 {
				got += " | "
			}
			got += fmt.Sprintf("%v %d %d %v", o.Result.Allowed, o.Result.Limit, o.Result.Remaining, o.Result.Override)
		}
		if got != c.want {
			t.Fatalf("RL.CHECK api pair api %s through %s = %s; want %s", c.other, f.id, got, c.want)
		}
	}
	g.assertSameState()

	// Past the expiry (by the leader's clock, which stamps the entry), the
	// policy decides brief again, and no replica holds the override.
	time.Sleep(time.Until(time.Unix(0, now+int64(1600*time.Millisecond))))
	if r := checkOn(t, f, "brief"); r.Override != algorithms.OverrideNone || !r.Allowed || r.Limit != 3 || r.Remaining != 2 {
		t.Fatalf("brief after its override expired = %+v; want the policy's 2 of 3 left", r)
	}
	g.converged()
	for _, m := range g.members {
		if w, ok := m.node.LocalOverride(0, ovrKey("brief")); ok {
			t.Fatalf("%s still holds the expired override %v", m.id, w)
		}
	}
	g.assertSameState()
}

package cluster

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/compat"
)

func sampleOps() []op {
	return []op{
		{code: opDecide, req: algorithms.Request{Key: []byte("user:42"), N: 1,
			Limit: algorithms.Limit{Algo: algorithms.Token, Count: 20, Period: 100e6}}},
		{code: opDecide, req: algorithms.Request{Key: []byte("a"), N: -3, Group: 7, ID: []byte("req-1"),
			Limit: algorithms.Limit{Algo: algorithms.Token, Count: 1 << 62, Period: 1}}},
		{code: opDelete, keys: [][]byte{[]byte("x"), []byte(""), []byte("y\x00z")}},
		{code: opExists, keys: [][]byte{[]byte("x")}},
		{code: opType, keys: [][]byte{[]byte("t")}},
		{code: opTTL, keys: [][]byte{[]byte("t")}},
		{code: opDBSize},
		{code: opFlush},
		{code: opMember, id: "n1", addr: "127.0.0.1:6381"},
		{code: opExec, xop: compat.Op{Cmd: compat.CmdScript, Script: compat.Known.Lookup([]byte(compat.FlexibleSHA1))},
			keys: [][]byte{[]byte("rlflx:1")}, argv: [][]byte{[]byte("1"), []byte("60")}},
		{code: opExec, xop: compat.Op{Cmd: compat.CmdScript, ReadOnly: true, Script: compat.Known.Lookup([]byte(compat.UlulePeekSHA1))},
			keys: [][]byte{[]byte("u")}},
		{code: opExec, xop: compat.Op{Cmd: compat.CmdSet}, keys: [][]byte{[]byte("s")},
			argv: [][]byte{[]byte("3"), []byte("EX"), []byte("60")}},
		{code: opVersion, keys: [][]byte{[]byte("w")}},
		{code: opTx, watches: []algorithms.Watch{{Key: []byte("w"), Version: 1<<64 - 1}, {Key: []byte("")}}, count: 1},
		{code: opDecide, req: algorithms.Request{Key: []byte("w"), N: 1,
			Limit: algorithms.Limit{Algo: algorithms.Fixed, Count: 5, Period: 60e9}}},
		{code: opACL, argv: [][]byte{[]byte("setuser"), []byte("tenant-a"), []byte(">p\x00w"), []byte("~tenant-a:*")}},
		{code: opDecide, req: algorithms.Request{Key: []byte("pol:free:token:u"), N: 1, Override: []byte("ovr:free:u"),
			Limit: algorithms.Limit{Algo: algorithms.Token, Count: 20, Period: 100e6}}},
		{code: opOverride, argv: [][]byte{[]byte("ovr:free:u"), make([]byte, 24)}},
		{code: opDecide, req: algorithms.Request{Key: []byte("hot"), N: 500, Min: 1,
			Limit: algorithms.Limit{Algo: algorithms.Token, Count: 100, Period: 1e6}}},
		{code: opOwn, epoch: 3, ranges: []slotRange{{lo: 0, hi: 5460}, {lo: 9000, hi: 9000}}},
		{code: opSlots, epoch: 4, ranges: []slotRange{{lo: 0, hi: 8191, group: 1}, {lo: 8192, hi: 16383, group: 2}}},
		{code: opGroup, group: 2, term: 7, id: "g2n1", nodes: []GroupNode{
			{ID: "g2n1", RESPAddr: "127.0.0.1:7201", RaftAddr: "127.0.0.1:8201"}, {ID: "g2n2"}}},
	}
}

// TestTakeEncodesAsADecisionPlusItsMin is the golden entry of opTake: an
// RL.TAKE decision is a decide's fields and then min, and decodes back to
// an opDecide with Request.Min; its result carries the amount granted.
func TestTakeEncodesAsADecisionPlusItsMin(t *testing.T) {
	take := op{code: opDecide, req: algorithms.Request{Key: []byte("hot"), N: 500, Min: 2,
		Limit: algorithms.Limit{Algo: algorithms.Token, Count: 100, Period: 1e6}}}
	// code, group 0, algo, count 100, period 1e6, n 500 (zig-zag varints), key, id, min 2
	want := []byte{byte(opTake), 0, byte(algorithms.Token), 0xc8, 0x01, 0x80, 0x89, 0x7a, 0xe8, 0x07, 3, 'h', 'o', 't', 0, 4}
	if got := appendOp(nil, &take); !bytes.Equal(got, want) {
		t.Fatalf("a take encodes as %x; want %x", got, want)
	}
	_, ops, err := decodeBatch(appendBatch(nil, 1, []op{take}))
	if err != nil {
		t.Fatal(err)
	}
	if ops[0].code != opDecide || ops[0].req.Min != 2 || ops[0].req.N != 500 || string(ops[0].req.Key) != "hot" {
		t.Fatalf("decoded as %+v", ops[0])
	}
	zero := append(want[:len(want)-1:len(want)-1], 0)
	if _, _, err := decodeBatch(append(append(appendBatch(nil, 1, nil)[:10:10], 1), zero...)); err == nil {
		t.Fatal("a take of min 0 decoded; want corrupt")
	}
	rs := []result{{out: algorithms.Outcome{Result: algorithms.Result{Allowed: true, Limit: 100, Remaining: 0, ResetAfter: 100e6, Granted: 100}}}}
	enc := appendResults(nil, rs)
	if wantRes := []byte{1, 5, 0xc8, 0x01, 1, 0xc8, 0x01, 0, 0, 0x80, 0x84, 0xaf, 0x5f, 0}; !bytes.Equal(enc, wantRes) {
		t.Fatalf("a take's result encodes as %x; want %x", enc, wantRes)
	}
	got, err := decodeResults(enc)
	if err != nil || got[0].out.Result != rs[0].out.Result {
		t.Fatalf("a take's result decodes as %+v, %v", got, err)
	}
}

// TestDecisionNamingAnOverrideEncodesAsBeforePlusItsKey: a decision that
// names no override encodes exactly as it always has (the log's older
// entries decode unchanged); one that does is opCheck on the wire, the same
// fields and then the override key, and decodes back to an opDecide.
func TestDecisionNamingAnOverrideEncodesAsBeforePlusItsKey(t *testing.T) {
	plain := op{code: opDecide, req: algorithms.Request{Key: []byte("pol:free:token:u"), N: 1,
		Limit: algorithms.Limit{Algo: algorithms.Token, Count: 20, Period: 100e6}}}
	want := []byte{byte(opDecide), 0, byte(algorithms.Token), 40, 0x80, 0x84, 0xaf, 0x5f, 2, 16}
	want = append(append(want, "pol:free:token:u"...), 0)
	if got := appendOp(nil, &plain); !bytes.Equal(got, want) {
		t.Fatalf("a plain decision encodes as %x; want %x", got, want)
	}
	named := plain
	named.req.Override = []byte("ovr:free:u")
	got := appendOp(nil, &named)
	if got[0] != byte(opCheck) || !bytes.Equal(got[1:len(want)], want[1:]) || !bytes.Equal(got[len(want):], append([]byte{10}, "ovr:free:u"...)) {
		t.Fatalf("a decision naming an override encodes as %x", got)
	}
	_, ops, err := decodeBatch(appendBatch(nil, 1, []op{named, plain}))
	if err != nil {
		t.Fatal(err)
	}
	if ops[0].code != opDecide || string(ops[0].req.Override) != "ovr:free:u" || ops[1].code != opDecide || ops[1].req.Override != nil {
		t.Fatalf("decoded as %+v and %+v", ops[0], ops[1])
	}
}

func TestBatchRoundTrip(t *testing.T) {
	ops := sampleOps()
	now, got, err := decodeBatch(appendBatch(nil, 1_795_000_000_123_456_789, ops))
	if err != nil {
		t.Fatal(err)
	}
	if now != 1_795_000_000_123_456_789 {
		t.Fatalf("now = %d", now)
	}
	for i := range ops {
		// Decoded empty slices are non-nil views; compare by encoding.
		if a, b := appendOp(nil, &ops[i]), appendOp(nil, &got[i]); !bytes.Equal(a, b) {
			t.Fatalf("op %d: %+v decoded as %+v", i, ops[i], got[i])
		}
	}
}

// Decoding into a state machine's scratch that held other entries gives
// exactly what decoding into fresh ops gives: nothing of an earlier op
// stays in its slot, whatever its kind and the new one's.
func TestDecodingIntoUsedOpsLeavesNothingBehind(t *testing.T) {
	ops := sampleOps()
	decides := []op{}
	for _, o := range ops {
		if o.code == opDecide {
			decides = append(decides, o)
		}
	}
	rev := slices.Clone(ops)
	slices.Reverse(rev)
	entries := [][]byte{appendBatch(nil, 1, ops), appendBatch(nil, 2, decides), appendBatch(nil, 3, rev),
		appendBatch(nil, 4, ops), appendBatch(nil, 5, decides[:1])}
	var scratch []op
	for i, e := range entries {
		_, fresh, err := decodeBatch(e)
		if err != nil {
			t.Fatal(err)
		}
		_, used, err := decodeBatchInto(e, scratch)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(used, fresh) {
			t.Fatalf("entry %d decoded into used ops:\n%+v\nwant, as into fresh ones:\n%+v", i, used, fresh)
		}
		scratch = used
	}
}

func TestResultsRoundTrip(t *testing.T) {
	rs := []result{
		{out: algorithms.Outcome{Result: algorithms.Result{Allowed: true, Limit: 20, Remaining: 19, ResetAfter: 100e6}}},
		{out: algorithms.Outcome{Result: algorithms.Result{Limit: 5, RetryAfter: -1}}, n: -2},
		{out: algorithms.Outcome{Err: errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")}},
		{exec: true, reply: execReply(t, compat.FlexibleSHA1, "1", "60")},
		{exec: true, reply: execReply(t, compat.RateLimitRedisGetSHA1)},
		{exec: true, reply: execReply(t, compat.UluleIncrSHA1, "x", "1")},
		{acl: true, n: 2, index: 1<<40 + 7},
		{out: algorithms.Outcome{Result: algorithms.Result{Allowed: true, Override: algorithms.OverrideUnlimited, Limit: 20, Remaining: 20}}},
		{out: algorithms.Outcome{Result: algorithms.Result{Override: algorithms.OverrideDeny, Limit: 20, RetryAfter: -1}}},
		{out: algorithms.Outcome{Result: algorithms.Result{Allowed: true, Override: algorithms.OverrideLimit, Limit: 200, Remaining: 7}}},
	}
	got, err := decodeResults(appendResults(nil, rs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		if got[i].exec != rs[i].exec || replyText(got[i].reply) != replyText(rs[i].reply) {
			t.Fatalf("result %d: reply %v; want %v", i, replyText(got[i].reply), replyText(rs[i].reply))
		}
		if got[i].out.Result != rs[i].out.Result || got[i].n != rs[i].n || got[i].acl != rs[i].acl || got[i].index != rs[i].index {
			t.Fatalf("result %d: %+v; want %+v", i, got[i], rs[i])
		}
		if (rs[i].out.Err == nil) != (got[i].out.Err == nil) ||
			rs[i].out.Err != nil && rs[i].out.Err.Error() != got[i].out.Err.Error() {
			t.Fatalf("result %d error: %v; want %v", i, got[i].out.Err, rs[i].out.Err)
		}
	}
}

// execReply is the reply of the known script sha on a new key with argv.
func execReply(t *testing.T, sha string, argv ...string) *compat.Reply {
	t.Helper()
	c := compat.Call{Now: 1_800_000_000_000_000_000, Keys: make([]compat.Key, 1)}
	for _, a := range argv {
		c.Argv = append(c.Argv, []byte(a))
	}
	compat.Exec(compat.Op{Cmd: compat.CmdScript, Script: compat.Known.Lookup([]byte(sha))}, &c)
	return &c.Reply
}

// replyText is a result's reply as text, "" for none.
func replyText(r *compat.Reply) string {
	if r == nil {
		return ""
	}
	return r.String()
}

// FuzzDecodeBatch: a log entry or a forwarded submission is a parser's
// input; no bytes may make it panic, and whatever decodes re-encodes to the
// same bytes.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(appendBatch(nil, 0, nil))
	f.Add(appendBatch(nil, -1, sampleOps()))
	f.Add([]byte{codecVersion, kindOps, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{codecVersion, kindOps})
	f.Add(appendBatch(nil, 5, decisionOps()))
	f.Fuzz(func(t *testing.T, data []byte) {
		now, ops, err := decodeBatch(data)
		fastNow, reqs, fast := decodeDecisionsInto(data, nil)
		decisions := err == nil
		for i := range ops {
			decisions = decisions && ops[i].code == opDecide
		}
		if fast != decisions {
			t.Fatalf("decoded as decisions: %v; as ops, all decisions: %v (%v)", fast, decisions, err)
		}
		for i := range reqs {
			if !reflect.DeepEqual(reqs[i], ops[i].req) || fastNow != now {
				t.Fatalf("request %d decodes as %+v, its op as %+v", i, reqs[i], ops[i].req)
			}
		}
		if err != nil {
			return
		}
		again := appendBatch(nil, now, ops)
		now2, ops2, err := decodeBatch(again)
		if err != nil || now2 != now || !reflect.DeepEqual(len(ops2), len(ops)) {
			t.Fatalf("re-encoded batch does not decode the same: %v", err)
		}
		if !bytes.Equal(appendBatch(nil, now2, ops2), again) {
			t.Fatal("encoding is not stable")
		}
	})
}

func FuzzDecodeResults(f *testing.F) {
	f.Add(appendResults(nil, []result{{n: 3}, {out: algorithms.Outcome{Err: errors.New("ERR x")}}}))
	reply := compat.ErrorReply(errors.New("ERR y"))
	f.Add(appendResults(nil, []result{{exec: true, reply: &reply}}))
	f.Add([]byte{0xff, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := decodeResults(data)
		if err != nil {
			return
		}
		if _, err := decodeResults(appendResults(nil, rs)); err != nil {
			t.Fatalf("re-encoded results do not decode: %v", err)
		}
	})
}

// TestShardOpsEncodeAsSpecified is the golden encoding of the shard ops
// (codec.go's comment): own, slots and group.
func TestShardOpsEncodeAsSpecified(t *testing.T) {
	for _, c := range []struct {
		o    op
		want []byte
	}{
		{op{code: opOwn, epoch: 3, ranges: []slotRange{{lo: 1, hi: 2}}}, []byte{18, 3, 1, 1, 2}},
		{op{code: opSlots, epoch: 1, ranges: []slotRange{{lo: 0, hi: 127, group: 2}}}, []byte{19, 1, 1, 0, 127, 2}},
		{op{code: opGroup, group: 1, term: 2, id: "a", nodes: []GroupNode{{ID: "a", RESPAddr: "r", RaftAddr: "t"}}},
			[]byte{20, 1, 2, 1, 'a', 1, 1, 'a', 1, 'r', 1, 't'}},
	} {
		if got := appendOp(nil, &c.o); !bytes.Equal(got, c.want) {
			t.Errorf("%d encodes as %v; want %v", c.o.code, got, c.want)
		}
	}
}

// TestShardOpsRefuseMalformedRanges: ranges out of order, overlapping,
// reversed or beyond the last slot, and a slots range without a group or
// a group op for group 0, make the entry corrupt.
func TestShardOpsRefuseMalformedRanges(t *testing.T) {
	for name, body := range map[string][]byte{
		"out of order":   {18, 1, 2, 10, 20, 0, 5},
		"overlapping":    {18, 1, 2, 0, 10, 10, 20},
		"reversed":       {18, 1, 1, 9, 3},
		"past the slots": {18, 1, 1, 0, 0x80, 0x80, 0x01},
		"no group":       {19, 1, 1, 0, 5, 0},
		"group 0":        {20, 0, 1, 0, 0},
		"short":          {19, 1, 3, 0, 5, 1},
	} {
		entry := append(appendBatch(nil, 0, nil)[:10], 1)
		if _, _, err := decodeBatch(append(entry, body...)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

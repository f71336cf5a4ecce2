package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// The log's encoding of overrides: a decision that names an override key
// travels as opCheck (and decodes as opDecide with Request.Override set),
// RL.OVERRIDE SET as opOverride, and a result's allowed byte carries the
// override that decided it.

// overrideWords packs o as RL.OVERRIDE SET does.
func overrideWords(t *testing.T, o policy.Override) [3]int64 {
	t.Helper()
	w, err := o.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// overrideOp is the opOverride op Node.SetOverride submits for key and w.
func overrideOp(key string, w [3]int64) op {
	words := make([]byte, 24)
	for i, v := range w {
		binary.LittleEndian.PutUint64(words[8*i:], uint64(v))
	}
	return op{code: opOverride, argv: [][]byte{[]byte(key), words}}
}

// checkOp is the decision RL.CHECK api <subject> makes under a 5/h token
// policy.
func checkOp(subject string) op {
	return op{code: opDecide, req: algorithms.Request{
		Key: policy.AppendCheckKey(nil, "api", algorithms.Token, []byte(subject)), N: 1,
		Limit:    algorithms.Limit{Algo: algorithms.Token, Count: 5, Period: 720e9},
		Override: policy.AppendOverrideKey(nil, "api", []byte(subject)),
	}}
}

// oldDecideEntry is an entry of one decision (RL.TOKEN user:42 100ms 20, at
// 1_795_000_000_123_456_789) as the encoding wrote it before overrides: a
// log written then must decode the same, and a decision without an
// override must still be written this way.
const oldDecideEntry = "0101" + "154d2f63fd1ee918" + "01" + // version, kind, now, 1 op
	"01" + "00" + "01" + "28" + "8084af5f" + "02" + // opDecide, group 0, TOKEN, count 20, period 100ms, n 1
	"07" + "757365723a3432" + "00" // key "user:42", no id

func TestDecisionWithoutOverrideEncodesAsBefore(t *testing.T) {
	want, err := hex.DecodeString(oldDecideEntry)
	if err != nil {
		t.Fatal(err)
	}
	ops := []op{{code: opDecide, req: algorithms.Request{Key: []byte("user:42"), N: 1,
		Limit: algorithms.Limit{Algo: algorithms.Token, Count: 20, Period: 100e6}}}}
	if got := appendBatch(nil, 1_795_000_000_123_456_789, ops); !bytes.Equal(got, want) {
		t.Fatalf("a decision without an override encodes as\n%x; before overrides it was\n%x", got, want)
	}
	now, got, err := decodeBatch(want)
	if err != nil {
		t.Fatal(err)
	}
	if now != 1_795_000_000_123_456_789 || len(got) != 1 || got[0].code != opDecide {
		t.Fatalf("old entry decodes as now %d, %+v", now, got)
	}
	// No override named: the store neither looks one up nor lets the
	// request replace another algorithm's state.
	if got[0].req.Override != nil {
		t.Fatalf("an old decision decodes with override key %q; want none (nil)", got[0].req.Override)
	}
	if string(got[0].req.Key) != "user:42" || got[0].req.Limit != ops[0].req.Limit || got[0].req.N != 1 {
		t.Fatalf("old entry decodes as %+v", got[0].req)
	}
}

func TestCheckAndOverrideOpsRoundTrip(t *testing.T) {
	limit := overrideWords(t, policy.Override{Kind: policy.OverrideLimit,
		Limit: algorithms.Limit{Algo: algorithms.Sliding, Count: 1000, Period: 60e9}, Expire: 1_800_000_000e9})
	deny := overrideWords(t, policy.Override{Kind: policy.OverrideDeny})
	withGroup := checkOp("bob")
	withGroup.req.Group = 3
	empty := checkOp("x")
	empty.req.Override = []byte{} // named, though empty: still an opCheck
	ops := []op{checkOp("alice"), overrideOp("ovr:api:alice", limit), withGroup, overrideOp("ovr:api:evil", deny),
		empty, {code: opDecide, req: algorithms.Request{Key: []byte("plain"), N: 1,
			Limit: algorithms.Limit{Algo: algorithms.Fixed, Count: 1, Period: 1e9}}}}
	data := appendBatch(nil, 42, ops)
	if data[11] != byte(opCheck) {
		t.Fatalf("a decision naming an override is op %d on the wire; want opCheck (%d)", data[11], opCheck)
	}
	now, got, err := decodeBatch(data)
	if err != nil {
		t.Fatal(err)
	}
	if now != 42 || len(got) != len(ops) {
		t.Fatalf("decoded now %d, %d ops", now, len(got))
	}
	for i := range ops {
		w, g := &ops[i], &got[i]
		if g.code != w.code {
			t.Fatalf("op %d decodes as code %d; want %d (opCheck is opDecide once decoded)", i, g.code, w.code)
		}
		if w.code == opDecide {
			if (g.req.Override == nil) != (w.req.Override == nil) || !bytes.Equal(g.req.Override, w.req.Override) ||
				!bytes.Equal(g.req.Key, w.req.Key) || g.req.Limit != w.req.Limit || g.req.N != w.req.N || g.req.Group != w.req.Group {
				t.Fatalf("op %d: %+v decoded as %+v", i, w.req, g.req)
			}
		}
		if w.code == opOverride && (len(g.argv) != 2 || !bytes.Equal(g.argv[0], w.argv[0]) || !bytes.Equal(g.argv[1], w.argv[1])) {
			t.Fatalf("op %d: argv %q decoded as %q", i, w.argv, g.argv)
		}
	}
	if again := appendBatch(nil, now, got); !bytes.Equal(again, data) {
		t.Fatalf("re-encoding differs:\n%x\n%x", again, data)
	}
}

func TestResultsCarryTheOverrideKind(t *testing.T) {
	kinds := []algorithms.OverrideKind{algorithms.OverrideNone, algorithms.OverrideLimit,
		algorithms.OverrideUnlimited, algorithms.OverrideDeny}
	var rs []result
	for _, k := range kinds {
		for _, allowed := range []bool{true, false} {
			rs = append(rs, result{out: algorithms.Outcome{Result: algorithms.Result{Allowed: allowed, Override: k,
				Limit: 10, Remaining: 3, RetryAfter: -1, ResetAfter: 5e9}}, n: int64(k)})
		}
	}
	rs = append(rs, result{out: algorithms.Outcome{Result: algorithms.Unlimited(algorithms.Limit{Count: 20})}},
		result{out: algorithms.Outcome{Result: algorithms.Denied(algorithms.Limit{Count: 20})}})
	got, err := decodeResults(appendResults(nil, rs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		if got[i].out.Result != rs[i].out.Result || got[i].n != rs[i].n || got[i].out.Err != nil {
			t.Fatalf("result %d: %+v decoded as %+v", i, rs[i].out, got[i].out)
		}
	}
	// A reply of a leader that predates overrides (allowed byte 0 or 1)
	// decodes with no override.
	for _, allowed := range []byte{0, 1} {
		old := []byte{1, 0, allowed, 40, 6, 1, 0x80, 0x94, 0xeb, 0xdc, 0x03, 0}
		got, err := decodeResults(old)
		if err != nil {
			t.Fatal(err)
		}
		r := got[0].out.Result
		if r.Allowed != (allowed == 1) || r.Override != algorithms.OverrideNone || r.Limit != 20 || r.Remaining != 3 || r.RetryAfter != -1 || r.ResetAfter != 500e6 {
			t.Fatalf("old result with allowed byte %d decodes as %+v", allowed, r)
		}
	}
}

// Every truncation of an entry holding opCheck and opOverride ops, and
// every length byte inflated, is an error: never a panic, never a
// shorter batch taken for the whole.
func TestCorruptCheckAndOverrideEntriesAreErrors(t *testing.T) {
	w := overrideWords(t, policy.Override{Kind: policy.OverrideUnlimited})
	data := appendBatch(nil, 7, []op{checkOp("alice"), overrideOp("ovr:api:alice", w)})
	for n := 0; n < len(data); n++ {
		if _, ops, err := decodeBatch(data[:n]); err == nil {
			t.Fatalf("the entry cut to %d of %d bytes decodes as %d ops", n, len(data), len(ops))
		}
	}
	for i := 11; i < len(data); i++ {
		for _, b := range []byte{0x7f, 0xff} {
			bad := bytes.Clone(data)
			bad[i] = b
			_, ops, err := decodeBatch(bad) // must not panic
			if err != nil {
				continue
			}
			// A change that still decodes (a key's byte, a longer varint)
			// is another valid entry: it re-encodes to one that decodes.
			if _, again, err := decodeBatch(appendBatch(nil, 7, ops)); err != nil || len(again) != len(ops) {
				t.Fatalf("byte %d = %#x decodes as %d ops, but its re-encoding does not: %v", i, b, len(ops), err)
			}
		}
	}
	// An opCheck whose override key runs past the entry.
	bad := appendBatch(nil, 7, []op{checkOp("alice")})
	bad = append(bad[:len(bad)-len("ovr:api:alice")-1], 0x7f, 'o')
	if _, _, err := decodeBatch(bad); !errors.Is(err, errCorrupt) {
		t.Fatalf("an override key longer than the entry: %v; want errCorrupt", err)
	}
	// An opOverride whose list claims more elements than the entry holds.
	bad = append(appendBatch(nil, 7, nil)[:10], 1, byte(opOverride), 0xff, 0xff, 0x03, 0)
	if _, _, err := decodeBatch(bad); !errors.Is(err, errCorrupt) {
		t.Fatalf("an opOverride list of 65535 elements in 1 byte: %v; want errCorrupt", err)
	}
}

// An opOverride that decodes but is not an override (a list of the wrong
// shape, words no override has, an expiry already past) is refused by
// every replica's state machine with the same error, and stores nothing.
func TestStateMachineRefusesMalformedOverrides(t *testing.T) {
	st := store.New(2)
	f := newStateMachine(st, nil, nil)
	good := overrideWords(t, policy.Override{Kind: policy.OverrideDeny})
	short := overrideOp("ovr:api:a", good)
	short.argv[1] = short.argv[1][:16]
	three := overrideOp("ovr:api:b", good)
	three.argv = append(three.argv, []byte("x"))
	one := op{code: opOverride, argv: [][]byte{[]byte("ovr:api:c")}}
	noKind := overrideOp("ovr:api:d", [3]int64{math.MaxInt64, 0, 0})
	past := overrideOp("ovr:api:e", overrideWords(t, policy.Override{Kind: policy.OverrideDeny, Expire: 5}))
	rs := applyEntry(t, f, 10, short, three, one, noKind, past)
	for i, want := range []string{errCorruptOverride.Error(), errCorruptOverride.Error(), errCorruptOverride.Error(),
		"invalid override", "invalid override"} {
		if rs[i].out.Err == nil || rs[i].out.Err.Error() != want {
			t.Fatalf("malformed override %d: %v; want %q", i, rs[i].out.Err, want)
		}
	}
	if n, _ := st.DBSize(10); n != 0 {
		t.Fatalf("malformed overrides stored %d keys", n)
	}
	// A well-formed one is applied, and a decision naming it is decided
	// with it.
	rs = applyEntry(t, f, 11, overrideOp("ovr:api:alice", good), checkOp("alice"))
	if rs[0].out.Err != nil || rs[0].n != 1 {
		t.Fatalf("SET: %+v; want created", rs[0])
	}
	if r := rs[1].out; r.Err != nil || r.Result.Allowed || r.Result.Override != algorithms.OverrideDeny || r.Result.RetryAfter != algorithms.NeverNS {
		t.Fatalf("a decision after a DENY override in the same entry: %+v", r)
	}
}

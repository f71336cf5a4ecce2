package client

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// The decoders on canned replies, in every form go-redis hands them over: positional arrays,
// RESP3 maps (map[any]any), RESP2 flat named arrays, RESP3 booleans, and replies of commands
// whose server side is newer than this client's tests (RL.CHECK with several pairs, RL.MATCH).

func TestDecodeDecisionReadsEveryForm(t *testing.T) {
	denied := Result{Allowed: false, Limit: 20, Remaining: 0, RetryAfter: 90 * ms, ResetAfter: 1990 * ms}
	cases := []struct {
		name  string
		reply any
		want  Result
	}{
		{"positional", []any{int64(0), int64(20), int64(0), int64(90), int64(1990)}, denied},
		{"positional with a boolean", []any{false, int64(20), int64(0), int64(90), int64(1990)}, denied},
		{"positional with a field added later", []any{int64(0), int64(20), int64(0), int64(90), int64(1990), int64(7)}, denied},
		{"RESP3 map", map[any]any{"allowed": false, "limit": int64(20), "remaining": int64(0),
			"retry_after_ms": int64(90), "reset_after_ms": int64(1990)}, denied},
		{"RESP2 flat", []any{"allowed", int64(0), "limit", int64(20), "remaining", int64(0),
			"retry_after_ms", int64(90), "reset_after_ms", int64(1990)}, denied},
		{"never", []any{int64(0), int64(3), int64(0), int64(-1), int64(600)},
			Result{Limit: 3, RetryAfter: Never, ResetAfter: 600 * ms}},
		{"leaky delay", []any{int64(1), int64(3), int64(1), int64(1000), int64(2000)},
			Result{Allowed: true, Limit: 3, Remaining: 1, RetryAfter: time.Second, ResetAfter: 2 * time.Second}},
		{"policy, RESP3", map[any]any{"allowed": true, "limit": int64(10), "remaining": int64(10),
			"retry_after_ms": int64(0), "reset_after_ms": int64(0), "policy": "free", "mode": "shadow",
			"quota": int64(20), "window_s": int64(2), "would_deny": true, "future_field": "x"},
			Result{Allowed: true, Limit: 10, Remaining: 10, Policy: "free", Mode: ModeShadow, Quota: 20, Window: 2 * time.Second, WouldDeny: true}},
		{"policy, RESP2 flat", []any{"allowed", int64(0), "limit", int64(10), "remaining", int64(0),
			"retry_after_ms", int64(-1), "reset_after_ms", int64(0), "policy", "free", "mode", "deny",
			"quota", int64(10), "window_s", int64(1), "would_deny", int64(0)},
			Result{Limit: 10, RetryAfter: Never, Policy: "free", Mode: ModeDeny, Quota: 10, Window: time.Second}},
	}
	for _, tc := range cases {
		var r Result
		if err := decodeDecision(tc.reply, &r); err != nil || r != tc.want {
			t.Errorf("%s: decode = %+v, %v; want %+v", tc.name, r, err, tc.want)
		}
	}
}

func TestDecodeDecisionKeepsTheCallersPolicyName(t *testing.T) {
	r := Result{Policy: "api-free", Allowed: true, Remaining: 99}
	if err := decodeDecision([]any{int64(0), int64(10), int64(0), int64(100), int64(1000)}, &r); err != nil {
		t.Fatal(err)
	}
	if r.Policy != "api-free" || r.Allowed || r.Remaining != 0 {
		t.Fatalf("decode = %+v; want the policy kept and the rest overwritten", r)
	}
}

func TestDecodeRefusesOtherShapes(t *testing.T) {
	for _, reply := range []any{
		nil, int64(1), "OK", []any{}, []any{int64(1), int64(2)},
		[]any{"allowed"}, []any{"limit", int64(3)}, map[any]any{"limit": int64(3)},
		[]any{int64(1), "x", int64(0), int64(0), int64(0)},
	} {
		var r Result
		if err := decodeDecision(reply, &r); !errors.Is(err, ErrUnexpectedReply) {
			t.Errorf("decodeDecision(%#v) = %v; want ErrUnexpectedReply", reply, err)
		}
		var a AllResult
		if err := decodeAll(reply, &a, nil); !errors.Is(err, ErrUnexpectedReply) {
			t.Errorf("decodeAll(%#v) = %v; want ErrUnexpectedReply", reply, err)
		}
		var m MatchResult
		if err := decodeMatch(reply, &m); !errors.Is(err, ErrUnexpectedReply) {
			t.Errorf("decodeMatch(%#v) = %v; want ErrUnexpectedReply", reply, err)
		}
	}
	var r Result
	if err := decodeThrottle([]any{int64(0), int64(1)}, &r); !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("decodeThrottle(short) = %v; want ErrUnexpectedReply", err)
	}
}

func TestDecodeAllReadsEveryForm(t *testing.T) {
	admit := []any{int64(1), int64(2), int64(1), int64(0), int64(3500000)}
	deny := []any{int64(0), int64(1), int64(0), int64(20001), int64(80000)}
	namedDeny := map[any]any{"allowed": false, "limit": int64(1), "remaining": int64(0),
		"retry_after_ms": int64(20001), "reset_after_ms": int64(80000)}
	want := AllResult{Denied: 1, Results: []Result{
		{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 3500000 * ms},
		{Limit: 1, RetryAfter: 20001 * ms, ResetAfter: 80000 * ms}}}
	for name, reply := range map[string]any{
		"positional": []any{int64(0), int64(1), []any{admit, deny}},
		"RESP3 map":  map[any]any{"allowed": false, "denied_index": int64(1), "results": []any{admit, namedDeny}},
		"RESP2 flat": []any{"allowed", int64(0), "denied_index", int64(1), "results", []any{admit,
			[]any{"allowed", int64(0), "limit", int64(1), "remaining", int64(0), "retry_after_ms", int64(20001), "reset_after_ms", int64(80000)}}},
	} {
		var got AllResult
		if err := decodeAll(reply, &got, nil); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: decode = %+v, %v; want %+v", name, got, err, want)
		}
	}
}

// RL.CHECK with several pairs answers like RL.ALL; with one pair, like RL.CHECK. Both read as
// an AllResult whose results carry their policies' names.
func TestDecodeCheckAllNamesEachPolicy(t *testing.T) {
	var got AllResult
	reply := []any{int64(1), int64(-1), []any{
		[]any{int64(1), int64(10), int64(9), int64(0), int64(100)},
		[]any{int64(1), int64(100), int64(99), int64(0), int64(600)}}}
	if err := decodeAll(reply, &got, []string{"per-user", "global"}); err != nil || !got.Allowed || got.Denied != -1 ||
		got.Results[0].Policy != "per-user" || got.Results[1].Policy != "global" || got.Results[1].Remaining != 99 {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	if err := decodeAll(reply, &got, []string{"only-one"}); !errors.Is(err, ErrUnexpectedReply) {
		t.Fatalf("two results for one policy: err = %v; want ErrUnexpectedReply", err)
	}
	single := []any{int64(0), int64(10), int64(0), int64(-1), int64(0)}
	if err := decodeAll(single, &got, []string{"free"}); err != nil || got.Allowed || got.Denied != 0 ||
		len(got.Results) != 1 || got.Results[0].Policy != "free" || !got.Results[0].Never() {
		t.Fatalf("one pair: decode = %+v, %v", got, err)
	}
}

func TestDecodeMatchReadsEveryForm(t *testing.T) {
	want := MatchResult{Code: CodeOverLimit, Statuses: []DescriptorStatus{
		{Code: CodeOK, Limit: 100, Remaining: 99, ResetAfter: 1000 * ms},
		{Code: CodeOverLimit, Limit: 10, Remaining: 0, ResetAfter: 42000 * ms}}}
	for name, reply := range map[string]any{
		"positional": []any{int64(2), []any{
			[]any{int64(1), int64(100), int64(99), int64(1000)},
			[]any{int64(2), int64(10), int64(0), int64(42000), int64(7)}}},
		"RESP3 map": map[any]any{"code": int64(2), "statuses": []any{
			map[any]any{"code": int64(1), "limit": int64(100), "remaining": int64(99), "reset_after_ms": int64(1000)},
			map[any]any{"code": "OVER_LIMIT", "limit": int64(10), "remaining": int64(0), "duration_until_reset_ms": int64(42000)}}},
		"RESP2 flat": []any{"code", "OVER_LIMIT", "statuses", []any{
			[]any{"code", int64(1), "limit", int64(100), "remaining", int64(99), "reset_after_ms", int64(1000)},
			[]any{int64(2), int64(10), int64(0), int64(42000)}}},
	} {
		var got MatchResult
		if err := decodeMatch(reply, &got); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: decode = %+v, %v; want %+v", name, got, err, want)
		}
	}
}

func TestDecodeThrottleUsesTheClientsTerms(t *testing.T) {
	cases := []struct {
		reply []any
		want  Result
	}{
		{[]any{int64(0), int64(16), int64(15), int64(-1), int64(2)}, Result{Allowed: true, Limit: 16, Remaining: 15, ResetAfter: 2 * time.Second}},
		{[]any{int64(1), int64(16), int64(0), int64(2), int64(32)}, Result{Limit: 16, RetryAfter: 2 * time.Second, ResetAfter: 32 * time.Second}},
		{[]any{int64(1), int64(16), int64(0), int64(-1), int64(32)}, Result{Limit: 16, RetryAfter: Never, ResetAfter: 32 * time.Second}},
	}
	for _, tc := range cases {
		var r Result
		if err := decodeThrottle(tc.reply, &r); err != nil || r != tc.want {
			t.Errorf("decodeThrottle(%v) = %+v, %v; want %+v", tc.reply, r, err, tc.want)
		}
	}
}

func TestDecodeInfoReadsBothForms(t *testing.T) {
	flat := []any{"algorithm", "rl-concurrency", "expire_at_ns", int64(1800000030000000000), "ttl_ms", int64(30000),
		"leases", []any{[]any{int64(-42), int64(1800000030000000000)}}}
	m := map[any]any{"algorithm": "rl-sliding", "expire_at_ns": int64(1800000120000000000), "ttl_ms": int64(120000),
		"window_start_ns": int64(1800000060000000000), "current": int64(3), "previous": int64(9)}
	var a, b Info
	if err := decodeInfo(flat, &a); err != nil || a.Algorithm != "rl-concurrency" || len(a.Leases) != 1 ||
		a.Leases[0].IDHash != -42 || a.TTL != 30*time.Second {
		t.Fatalf("flat: %+v, %v", a, err)
	}
	if err := decodeInfo(m, &b); err != nil || b.Current != 3 || b.Previous != 9 || b.WindowStart.UnixMilli() != 1800000060000 {
		t.Fatalf("map: %+v, %v", b, err)
	}
	var none Info
	if err := decodeInfo([]any{"ttl_ms", int64(3)}, &none); !errors.Is(err, ErrUnexpectedReply) {
		t.Fatalf("no algorithm: err = %v", err)
	}
}

// redisErr is an error reply as go-redis returns it (its type is internal).
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

func TestClassifyMapsEveryPrefix(t *testing.T) {
	cases := map[string]error{
		"WRONGTYPE Operation against a key holding the wrong kind of value": ErrWrongType,
		"ERR no such policy 'x'": ErrNoSuchPolicy,
		"CLUSTERDOWN no leader: the group has no quorum right now; nothing was applied":            ErrClusterDown,
		"UNKNOWN outcome unknown: leadership lost; the decision may or may not have been applied":  ErrOutcomeUnknown,
		"TRYAGAIN outcome unknown: leadership lost; the decision may or may not have been applied": ErrOutcomeUnknown, // an older server
		"OOM command not allowed when used memory > 'maxmemory'.":                                  ErrOOM,
		"NOAUTH Authentication required.":                                                          ErrNoAuth,
		"WRONGPASS invalid username-password pair or user is disabled.":                            ErrWrongPass,
		"NOPERM User u has no permissions to run the 'rl.token' command":                           ErrNoPerm,
		"READONLY You can't write against a read only replica.":                                    ErrReadOnly,
		"ERR unknown command 'RL.CHECK', with args beginning with: ":                               ErrUnknownCommand,
		"ERR unknown subcommand 'NAMED-REPLY'. Try CLIENT HELP.":                                   ErrUnknownCommand,
		"ERR max number of clients reached":                                                        ErrMaxClients,
		"ERR wrong number of arguments for 'rl.token' command":                                     ErrServer,
		"EXECABORT Transaction discarded because of previous errors.":                              ErrServer,
	}
	if !errors.Is(classify(redisErr("UNKNOWN x")), ErrTryAgain) {
		t.Errorf("UNKNOWN does not match ErrTryAgain, the older name of ErrOutcomeUnknown")
	}
	for msg, kind := range cases {
		err := classify(fmt.Errorf("wrapped: %w", redisErr(msg)))
		if !errors.Is(err, kind) || err.Error() != msg {
			t.Errorf("classify(%q) = %v; want %v", msg, err, kind)
		}
	}
	if err := classify(errors.New("dial tcp: connection refused")); errors.Is(err, ErrServer) {
		t.Errorf("a network error classified as a server error")
	}
}

func TestRetryableIsOnlyWhatIsSafeUnlessAsked(t *testing.T) {
	down, again := classify(redisErr("CLUSTERDOWN x")), classify(redisErr("UNKNOWN outcome unknown: x"))
	off, safe, all := New(nil), New(nil, WithRetry(Retry{For: time.Second})), New(nil, WithRetry(Retry{For: time.Second, UnknownOutcome: true}))
	for _, tc := range []struct {
		c           *Client
		down, again bool
	}{{off, false, false}, {safe, true, false}, {all, true, true}} {
		if tc.c.retryable(down) != tc.down || tc.c.retryable(again) != tc.again {
			t.Errorf("retry %+v: CLUSTERDOWN %v, UNKNOWN %v; want %v, %v", tc.c.retry, tc.c.retryable(down), tc.c.retryable(again), tc.down, tc.again)
		}
	}
	for attempt := 0; attempt < 40; attempt++ {
		d := safe.backoff(attempt)
		ceil := min(10*ms<<min(attempt, 20), 500*ms)
		if d < ceil/2 || d > ceil {
			t.Errorf("backoff(%d) = %v; want within [%v, %v]", attempt, d, ceil/2, ceil)
		}
	}
}

// The fuzz seeds of the policy replies decode to what they stand for.
func TestDecodePolicyAndOverrideReplies(t *testing.T) {
	seeds := policySeeds()
	var p PolicyInfo
	if err := decodePolicy((&replyGen{b: seeds[0]}).value(0), &p); err != nil || p.Name != "x" ||
		p.Limit != Token("", Per(1, 100*time.Millisecond), 20) || p.Limit.Window() != 2*time.Second {
		t.Fatalf("decodePolicy = %+v, %v", p, err)
	}
	var o Override
	if err := decodeOverride((&replyGen{b: seeds[1]}).value(0), &o); err != nil || o.Mode != OverrideLimit ||
		o.Limit != Fixed("", 5, time.Minute) || o.TTL != 100*time.Millisecond {
		t.Fatalf("decodeOverride = %+v, %v", o, err)
	}
	list, next, err := decodeOverrideList((&replyGen{b: seeds[2]}).value(0))
	if err != nil || next != 0 || len(list) != 1 || list[0].Subject != "x" || list[0].Mode != OverrideDeny ||
		list[0].TTL != 0 || list[0].Limit.Algorithm() != 0 {
		t.Fatalf("decodeOverrideList = %+v, %d, %v", list, next, err)
	}
	if err := decodeOverride([]any{"mode"}, &o); !errors.Is(err, ErrUnexpectedReply) {
		t.Fatalf("decodeOverride of a bad reply: %v", err)
	}
}

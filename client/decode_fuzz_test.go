package client

import (
	"encoding/binary"
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// replyGen turns fuzz bytes into a reply as go-redis hands it over: int64, bool, float64,
// string (often a field name), nil, []any and map[any]any, nested.
type replyGen struct{ b []byte }

var fieldNames = []string{fAllowed, fLimit, fRemaining, fRetryAfter, fResetAfter, fPolicy, fMode,
	fQuota, fWindow, fWouldDeny, fDenied, fResults, fCode, fStatuses, fDurReset, "algorithm",
	"ttl_ms", "entries_ns", "leases", "OK", "OVER_LIMIT", "x",
	"name", "count", "period_ns", "shadow", "source", "unlimited", "deny", "TOKEN", "FIXED", "0"}

// field returns the byte that replyGen reads as fieldNames' name.
func field(name string) byte {
	for i, n := range fieldNames {
		if n == name {
			return byte(i)
		}
	}
	panic(name)
}

// i64 is replyGen's encoding of the int64 n.
func i64(n int64) []byte { return binary.LittleEndian.AppendUint64([]byte{1}, uint64(n)) }

// policySeeds are replies of RL.POLICY GET, RL.OVERRIDE GET and RL.OVERRIDE LIST.
func policySeeds() [][]byte {
	str := func(name string) []byte { return []byte{3, field(name)} }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	return [][]byte{
		cat([]byte{5, 4, field("name")}, str("x"), []byte{field("algorithm")}, str("TOKEN"),
			[]byte{field("count"), 0, 20, field("period_ns")}, i64(100_000_000)),
		cat([]byte{5, 5, field("mode")}, str("limit"), []byte{field("algorithm")}, str("FIXED"),
			[]byte{field("count"), 0, 5, field("period_ns")}, i64(60_000_000_000), []byte{field("ttl_ms"), 0, 100}),
		cat([]byte{4, 2}, str("0"), []byte{4, 1, 4, 6}, str("x"), str("deny"), []byte{7, 0, 0, 0, 0, 0, 0xff}),
	}
}

func (g *replyGen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *replyGen) value(depth int) any {
	switch op := g.byte(); op % 8 {
	case 0:
		return int64(int8(g.byte()))
	case 1:
		if len(g.b) < 8 {
			return int64(-1)
		}
		v := int64(binary.LittleEndian.Uint64(g.b))
		g.b = g.b[8:]
		return v
	case 2:
		return g.byte()%2 == 1
	case 3:
		return fieldNames[int(g.byte())%len(fieldNames)]
	case 4:
		if depth > 3 {
			return nil
		}
		n := int(g.byte() % 8)
		list := make([]any, n)
		for i := range list {
			list[i] = g.value(depth + 1)
		}
		return list
	case 5:
		if depth > 3 {
			return nil
		}
		n := int(g.byte() % 8)
		m := make(map[any]any, n)
		for i := 0; i < n; i++ {
			m[fieldNames[int(g.byte())%len(fieldNames)]] = g.value(depth + 1)
		}
		return m
	case 6:
		return float64(int8(g.byte())) / 2
	}
	return nil
}

// FuzzDecodeReplies: every decoder reads any reply without panicking, and what it accepts is
// consistent (an admitted decision never says Never; an admitted RL.ALL denies at -1).
func FuzzDecodeReplies(f *testing.F) {
	f.Add([]byte{4, 5, 0, 1, 0, 20, 0, 0, 0, 90, 0, 100})
	f.Add([]byte{5, 5, 0, 2, 1, 1, 0, 20, 2, 0, 5, 3, 0, 4, 0, 100})
	f.Add([]byte{4, 3, 0, 0, 0, 255, 4, 1, 4, 5, 0, 1, 0, 2, 0, 1, 0, 0, 0, 9})
	f.Add([]byte{4, 2, 0, 2, 4, 1, 4, 4, 0, 1, 0, 100, 0, 99, 0, 10})
	for _, seed := range policySeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v := (&replyGen{b: data}).value(0)
		var r Result
		if err := decodeDecision(v, &r); err == nil {
			if r.Allowed && r.RetryAfter < 0 {
				t.Fatalf("admitted with RetryAfter %v from %#v", r.RetryAfter, v)
			}
		} else if !errors.Is(err, ErrUnexpectedReply) {
			t.Fatalf("decodeDecision error %v is not ErrUnexpectedReply", err)
		}
		var a AllResult
		if err := decodeAll(v, &a, nil); err == nil && a.Allowed && a.Denied != -1 {
			t.Fatalf("admitted RL.ALL with denied index %d from %#v", a.Denied, v)
		}
		decodeAll(v, &a, []string{"p1", "p2"})
		var m MatchResult
		if err := decodeMatch(v, &m); err == nil && m.Code > CodeOverLimit {
			t.Fatalf("code %d from %#v", m.Code, v)
		}
		decodeThrottle(v, &r)
		var info Info
		decodeInfo(v, &info)
		var pol PolicyInfo
		if err := decodePolicy(v, &pol); err != nil && !errors.Is(err, ErrUnexpectedReply) {
			t.Fatalf("decodePolicy error %v is not ErrUnexpectedReply", err)
		}
		var o Override
		if err := decodeOverride(v, &o); err == nil && (o.Mode == "" || o.TTL < 0) {
			t.Fatalf("override %+v from %#v", o, v)
		}
		if list, _, err := decodeOverrideList(v); err == nil {
			for _, it := range list {
				if it.Mode == "" || it.TTL < 0 {
					t.Fatalf("listed override %+v from %#v", it, v)
				}
			}
		}
	})
}

var rateText = regexp.MustCompile(`^([0-9]+)/([0-9]*)(ms|s|m|h|d)$`)

var unitOf = map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}

// FuzzRateFormatsExactly: a valid rate formats to the server's syntax, and the text means the
// same rate exactly (N/D = n/per as fractions); an invalid one formats as "invalid".
func FuzzRateFormatsExactly(f *testing.F) {
	f.Add(int64(10), int64(time.Second))
	f.Add(int64(100), int64(90*time.Second))
	f.Add(int64(1), int64(1500*time.Microsecond))
	f.Add(int64(7), int64(1))
	f.Add(int64(1<<62), int64(3))
	f.Fuzz(func(t *testing.T, n, per int64) {
		r := Per(n, time.Duration(per))
		s := r.String()
		if n <= 0 || per <= 0 {
			if r.Valid() || s != "invalid" {
				t.Fatalf("Per(%d, %d) = %q, valid %v", n, per, s, r.Valid())
			}
			return
		}
		if !r.Valid() {
			if s != "invalid" {
				t.Fatalf("invalid Per(%d, %d) formats as %q", n, per, s)
			}
			return
		}
		m := rateText.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("Per(%d, %d) = %q: not the server's syntax", n, per, s)
		}
		count, _ := strconv.ParseInt(m[1], 10, 64)
		k := int64(1)
		if m[2] != "" {
			k, _ = strconv.ParseInt(m[2], 10, 64)
		}
		d := new(big.Int).Mul(big.NewInt(k), big.NewInt(int64(unitOf[m[3]])))
		// count / d == n / per  ⇔  count × per == n × d
		lhs := new(big.Int).Mul(big.NewInt(count), big.NewInt(per))
		rhs := new(big.Int).Mul(big.NewInt(n), d)
		if lhs.Cmp(rhs) != 0 {
			t.Fatalf("Per(%d, %d) = %q, which is another rate", n, per, s)
		}
	})
}

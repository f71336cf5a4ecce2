package commands

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestE2ERefillOver146YearsIsRefused: a bucket whose capacity times its
// rate's interval passes 2^62 ns (about 146 years), which used to be
// clamped so that the reply's limit overstated the bucket and PTTL
// disagreed with reset_after_ms, is refused with a named error by every
// command that builds one, and creates nothing; the largest accepted one
// replies its real capacity and a PTTL that agrees.
func TestE2ERefillOver146YearsIsRefused(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	const tooLong = "ERR capacity times the rate's interval is too long (over 146 years)"
	for _, c := range [][]any{
		{"RL.TOKEN", "k", "1/s", "4611686019"},
		{"RL.TOKEN", "k", "1000000000/s", "4611686018427387905"},
		{"RL.TOKEN", "k", "1/53376d", 1},
		{"RL.TOKEN", "k", "1/h", "9223372036854775807", 0},
		{"RL.LEAKY", "k", "1/s", "4611686019"},
		{"RL.LEAKY", "k", "0.5", "2305843010"},
		{"RL.ALL", 1, "FIXED", "f", 5, "1m", "TOKEN", "k", "1/s", "4611686019"},
		{"RL.ALL", 1, "LEAKY", "k", "1/d", "53376"},
	} {
		if got := doErr(t, rdb, c...); got != tooLong {
			t.Errorf("%v = %q; want %q", c, got, tooLong)
		}
	}
	const burstTooLong = "ERR max_burst+1 times period/count is too long (over 146 years)"
	for _, c := range [][]any{
		{"CL.THROTTLE", "k", "4611686018", 1, 1},
		{"CL.THROTTLE", "k", 0, 1, "4611686019"},
		{"CL.THROTTLE", "k", "9223372036854775806", 30, 60},
	} {
		if got := doErr(t, rdb, c...); got != burstTooLong {
			t.Errorf("%v = %q; want %q", c, got, burstTooLong)
		}
	}
	if n := do(t, rdb, "DBSIZE"); n != int64(0) {
		t.Fatalf("DBSIZE = %v after refused commands", n)
	}
	// The largest accepted: full at creation, emptied by one call of n =
	// capacity, reset in 146 years, and PTTL says the same.
	for _, c := range [][]any{
		{"RL.TOKEN", "t", "1/s", "4611686018"},
		{"RL.LEAKY", "l", "1000000000/s", "4611686018427387904"},
	} {
		key := c[1].(string)
		peek := do(t, rdb, append(c, 0)...).([]any)
		if peek[1] != peek[2] {
			t.Fatalf("%v peek = %v: limit and remaining of a full bucket differ", c, peek)
		}
		r := do(t, rdb, append(c, peek[1])...).([]any)
		pttl := do(t, rdb, "PTTL", key)
		if r[0] != int64(1) || r[4] != pttl || r[4].(int64) < 146*365*86400*1000 {
			t.Fatalf("%v n=capacity = %v, PTTL %v; want admitted with reset_after_ms = PTTL ≈ 146 years", c, r, pttl)
		}
	}
	r := do(t, rdb, "CL.THROTTLE", "c", "4611686017", 1, 1, "4611686018").([]any)
	if pttl := do(t, rdb, "PTTL", "c").(int64); r[0] != int64(0) || r[4].(int64) != (pttl+999)/1000 {
		t.Fatalf("CL.THROTTLE at the bound = %v, PTTL %d; want admitted, reset_after the PTTL in seconds", r, pttl)
	}
}

// TestE2EAcceptedBucketsAgreeWithPTTL is a property check over random
// parameters, many at the bound: for every RL.TOKEN, RL.LEAKY, CL.THROTTLE
// and RL.ALL member the server accepts, a fresh bucket's remaining is its
// limit (the limit does not overstate it), and after a call that takes
// from it, reset_after (ms, or s for CL.THROTTLE) is what PTTL says; every
// refusal is a named error. The clock is frozen, so both answers see the
// same now.
func TestE2EAcceptedBucketsAgreeWithPTTL(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(62, 146))
	units := []string{"ms", "s", "m", "h", "d"}
	big := func() string { // log-uniform over [1, 2^63), with the bound's neighbours often
		if rng.IntN(4) == 0 {
			return strconv.FormatInt(int64(1)<<62/(1+rng.Int64N(1e9))+rng.Int64N(3)-1, 10)
		}
		return strconv.FormatUint(1+rng.Uint64N(uint64(1)<<(1+rng.IntN(62))), 10)
	}
	rate := func() string {
		switch rng.IntN(3) {
		case 0:
			return fmt.Sprintf("%d/%s", 1+rng.Int64N(1000), units[rng.IntN(len(units))])
		case 1:
			return fmt.Sprintf("1/%d%s", 1+rng.Int64N(100000), units[rng.IntN(len(units))])
		}
		return fmt.Sprintf("%d.%d", rng.IntN(100), 1+rng.IntN(9))
	}
	accepted := 0
	for i := 0; i < 600; i++ {
		key := fmt.Sprint("k", i)
		var cmd []any
		switch rng.IntN(4) {
		case 0:
			cmd = []any{"RL.TOKEN", key, rate(), big()}
		case 1:
			cmd = []any{"RL.LEAKY", key, rate(), big()}
		case 2:
			cmd = []any{"CL.THROTTLE", key, big(), 1 + rng.Int64N(1000), 1 + rng.Int64N(1<<33)}
		default:
			cmd = []any{"RL.ALL", 1, []string{"TOKEN", "LEAKY"}[rng.IntN(2)], key, rate(), big()}
		}
		peekCmd := append([]any{}, cmd...)
		switch cmd[0] {
		case "RL.ALL":
			peekCmd[1] = 0
		default:
			peekCmd = append(peekCmd, 0)
		}
		v, err := rdb.Do(ctx, peekCmd...).Result()
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "too long (over 146 years)") && !strings.Contains(msg, "rate is too") {
				t.Fatalf("%v: %v; want a named error", peekCmd, msg)
			}
			continue
		}
		accepted++
		first := v.([]any)
		if cmd[0] == "RL.ALL" {
			first = first[2].([]any)[0].([]any)
		}
		limit, remaining := first[1].(int64), first[2].(int64)
		if remaining != limit {
			t.Fatalf("%v: a fresh bucket replies limit %d, remaining %d", peekCmd, limit, remaining)
		}
		take := append([]any{}, cmd...)
		if cmd[0] != "RL.ALL" {
			take = append(take, 1)
		}
		r := do(t, rdb, take...).([]any)
		if cmd[0] == "RL.ALL" {
			r = r[2].([]any)[0].([]any)
		}
		pttl := do(t, rdb, "PTTL", key).(int64)
		reset := r[4].(int64)
		switch {
		case cmd[0] == "CL.THROTTLE" && reset != cellSeconds(pttl*1e6) && reset != cellSeconds(pttl*1e6)-1:
			t.Fatalf("%v = %v; PTTL %d ms: reset_after %d s disagrees", take, r, pttl, reset)
		case cmd[0] != "CL.THROTTLE" && reset != pttl:
			t.Fatalf("%v = %v; PTTL %d: reset_after_ms disagrees", take, r, pttl)
		}
	}
	if accepted < 200 {
		t.Fatalf("only %d of 600 parameter sets accepted", accepted)
	}
	t.Logf("%d of 600 random parameter sets accepted, all agreeing", accepted)
}

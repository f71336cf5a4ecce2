package commands

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

func overrideSession(tb testing.TB) *session {
	tb.Helper()
	h, _ := loopbackOn(tb, DefaultConfig(), store.New(1))
	return newSession(h, nil)
}

func splitArgs(line string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(line) {
		out = append(out, []byte(f))
	}
	return out
}

func TestOverrideSpecParsesEachForm(t *testing.T) {
	s := overrideSession(t)
	const now = int64(1_700_000_000) * int64(time.Second)
	for _, tc := range []struct {
		line string
		want policy.Override
	}{
		{"UNLIMITED", policy.Override{Kind: policy.OverrideUnlimited}},
		{"deny", policy.Override{Kind: policy.OverrideDeny}},
		{"DENY EXPIRE 30s", policy.Override{Kind: policy.OverrideDeny, Expire: now + 30*int64(time.Second)}},
		{"unlimited expire 1h", policy.Override{Kind: policy.OverrideUnlimited, Expire: now + int64(time.Hour)}},
		{"TOKEN 100/s 200", policy.Override{Kind: policy.OverrideLimit,
			Limit: algorithms.Limit{Algo: algorithms.Token, Count: 200, Period: int64(time.Second) / 100}}},
		{"FIXED 60 1m EXPIRE 1d", policy.Override{Kind: policy.OverrideLimit,
			Limit:  algorithms.Limit{Algo: algorithms.Fixed, Count: 60, Period: int64(time.Minute)},
			Expire: now + 24*int64(time.Hour)}},
		{"SLIDING 5 30s", policy.Override{Kind: policy.OverrideLimit,
			Limit: algorithms.Limit{Algo: algorithms.Sliding, Count: 5, Period: 30 * int64(time.Second)}}},
	} {
		got, err := s.parseOverrideSpec(splitArgs(tc.line), now)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%q = %+v; want %+v", tc.line, got, tc.want)
		}
	}
}

func TestOverrideSpecRefusesBadWords(t *testing.T) {
	s := overrideSession(t)
	const now = int64(1_700_000_000) * int64(time.Second)
	for _, tc := range []struct{ line, want string }{
		{"", "syntax error"},
		{"UNLIMITED 5", "syntax error"},
		{"DENY EXPIRE", "syntax error"},
		{"DENY EXPIRE 1s EXTRA", "syntax error"},
		{"DENY TTL 1s", "syntax error"},
		{"TOKEN 10/s", "syntax error"},
		{"GCRA 1 1s", "unknown algorithm"},
		{"TOKEN 0/s 1", "rate"},
		{"FIXED 0 1s", "limit must be positive"},
		{"FIXED 1 1", "window"},
		{"DENY EXPIRE 0s", "expire must be positive"},
		{"DENY EXPIRE 5", "expire"},
		{"DENY EXPIRE 106751d", "invalid expire time in 'rl.override|set' command"},
		{"FIXED 140737488355328 1s", "above 140737488355327"},
		{"CONCURRENCY 5 30s", "CONCURRENCY is not a limit RL.CHECK decides"},
	} {
		_, err := s.parseOverrideSpec(splitArgs(tc.line), now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v; want one containing %q", tc.line, err, tc.want)
		}
	}
}

// FuzzOverrideSpec feeds RL.OVERRIDE SET's words (split on spaces) to the
// parser at a fuzzed instant: it never panics, an accepted override packs
// and unpacks to itself, and an EXPIRE always lies after now.
func FuzzOverrideSpec(f *testing.F) {
	for _, seed := range []string{
		"UNLIMITED", "DENY", "DENY EXPIRE 30s", "TOKEN 10/s 20", "TOKEN 100/s 200 EXPIRE 1h",
		"FIXED 60 1m", "SLIDING 5 1s", "LOG 10 1s", "LEAKY 1/s 3", "CONCURRENCY 5 30s",
		"GCRA 1 1", "DENY EXPIRE 106751d", "TOKEN 1/s 140737488355328", "deny expire",
	} {
		f.Add(seed, int64(1_700_000_000_000_000_000))
	}
	s := overrideSession(f)
	f.Fuzz(func(t *testing.T, line string, now int64) {
		o, err := s.parseOverrideSpec(splitArgs(line), now)
		if err != nil {
			var re replyError
			if !errors.As(err, &re) && !errors.Is(err, policy.ErrBadOverride) && !errors.Is(err, policy.ErrBadLimit) {
				t.Fatalf("%q: error %T %v outside the vocabularies", line, err, err)
			}
			return
		}
		if o.Expire != 0 && (o.Expire <= now || o.Expire == math.MaxInt64) {
			t.Fatalf("%q at %d: expire %d", line, now, o.Expire)
		}
		w, err := o.Pack()
		if err != nil {
			t.Fatalf("%q: accepted %+v does not pack: %v", line, o, err)
		}
		back, err := policy.UnpackOverride(w)
		if err != nil || back != o {
			t.Fatalf("%q: %+v unpacked as %+v, %v", line, o, back, err)
		}
	})
}

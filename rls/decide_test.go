package rls

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

func TestDeniedHitsCountNothingByDefault(t *testing.T) {
	f := newFixture(t, Config{}, "rules/api.yaml")
	check(t, "take 3 of 5", f.call(request("api", 3, desc("remote_address", "a"))), ok, limited(ok, 5, minute, 2))
	// 3 more do not fit: denied, and the 2 left stay.
	check(t, "3 more", f.call(request("api", 3, desc("remote_address", "a"))), over, limited(over, 5, minute, 2))
	check(t, "2 fit", f.call(request("api", 2, desc("remote_address", "a"))), ok, limited(ok, 5, minute, 0))
}

func TestCountOverLimitTakesWhatIsLeft(t *testing.T) {
	f := newFixture(t, Config{CountOverLimit: true, Headers: HeadersXRateLimit}, "rules/api.yaml")
	check(t, "take 3 of 5", f.call(request("api", 3, desc("remote_address", "a"))), ok, limited(ok, 5, minute, 2))
	// 3 more do not fit: denied, and they take the 2 left, as a counter
	// that counts denied hits would reach 6 > 5.
	resp := f.call(request("api", 3, desc("remote_address", "a")))
	check(t, "3 more", resp, over, limited(over, 5, minute, 0))
	wantHeaders(t, "3 more", resp, "X-RateLimit-Limit: 5", "X-RateLimit-Remaining: 0", "X-RateLimit-Reset: 50", "Retry-After: 50")
	check(t, "1 more", f.call(request("api", 0, desc("remote_address", "a"))), over, limited(over, 5, minute, 0))
	f.clock.advance(50 * time.Second)
	check(t, "next window", f.call(request("api", 0, desc("remote_address", "a"))), ok, limited(ok, 5, minute, 4))

	// A token bucket (4 tokens, one per 100 ms): 3 taken, then 3 more are
	// denied and take the last one; the wait is then for 3 tokens, 300 ms.
	check(t, "token 3", f.call(request("api", 3, desc("token", "b"))), ok, limited(ok, 10, second, 1))
	resp = f.call(request("api", 3, desc("token", "b")))
	check(t, "token 3 more", resp, over, limited(over, 10, second, 0))
	if v, _ := header(resp, "Retry-After"); v != "1" {
		t.Fatalf("Retry-After %q; want 1 (300 ms, rounded up)", v)
	}
	f.clock.advance(299 * time.Millisecond)
	check(t, "token check at 299 ms", f.call(request("api", 0, withHits(desc("token", "b"), 0))), ok, limited(ok, 10, second, 2))
	f.clock.advance(time.Millisecond)
	check(t, "token 3 at 300 ms", f.call(request("api", 3, desc("token", "b"))), ok, limited(ok, 10, second, 0))
}

func TestCountOverLimitInABatchCallTakesOnlyFromTheDenied(t *testing.T) {
	f := newFixture(t, Config{Batch: BatchCall, CountOverLimit: true}, "rules/api.yaml")
	req := request("api", 2, desc("user", "c"), desc("user", "c", "plan", "free"))
	check(t, "first", f.call(req), ok, limited(ok, 10, minute, 8), limited(ok, 3, minute, 1))
	// The free plan's 1 left is taken; the user's limit, refused with the call, keeps its 8.
	check(t, "second", f.call(req), over, limited(ok, 10, minute, 8), limited(over, 3, minute, 0))
}

func TestWaitAfterTakeIsNeverEarly(t *testing.T) {
	ms := int64(time.Millisecond)
	tok := algorithms.Limit{Algo: algorithms.Token, Count: 4, Period: 100 * ms}
	fixed := algorithms.Limit{Algo: algorithms.Fixed, Count: 5, Period: 60_000 * ms}
	sliding := algorithms.Limit{Algo: algorithms.Sliding, Count: 5, Period: 60_000 * ms}
	cases := []struct {
		name               string
		r                  algorithms.Request
		retry, reset, want int64
	}{
		{"token: 3 of a full-again-in-400ms bucket", algorithms.Request{Limit: tok, N: 3}, 200 * ms, 400 * ms, 300 * ms},
		{"token: the wait never shrinks", algorithms.Request{Limit: tok, N: 1}, 150 * ms, 400 * ms, 150 * ms},
		{"token: never stays never", algorithms.Request{Limit: tok, N: 9}, algorithms.NeverNS, 400 * ms, algorithms.NeverNS},
		{"fixed: the window's end", algorithms.Request{Limit: fixed, N: 3}, 50_000 * ms, 50_000 * ms, 50_000 * ms},
		{"sliding: until the state resets", algorithms.Request{Limit: sliding, N: 3}, 10_000 * ms, 90_000 * ms, 90_000 * ms},
		{"token: a product past int64", algorithms.Request{Limit: algorithms.Limit{Algo: algorithms.Token, Count: 1 << 62, Period: 4}, N: 1}, 5, 7, 7},
	}
	for _, c := range cases {
		if got := waitAfterTake(c.r, c.retry, c.reset); got != c.want {
			t.Errorf("%s: waitAfterTake = %d; want %d", c.name, got, c.want)
		}
	}
}

func TestConfigValidateRefusesUnknownModes(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for _, bad := range []Config{{Batch: BatchCall + 1}, {UnknownDomain: UnknownDomainError + 1}, {Headers: HeadersRateLimitTrio + 1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

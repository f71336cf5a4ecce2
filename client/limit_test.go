package client

import (
	"testing"
	"time"
)

// A bucket's Window is what RateLimit-Policy's w= carries: capacity × period / count, exactly
// when it divides and rounded up to the nanosecond when it does not, never capacity × the
// rounded-up interval (7 per hour with a burst of 7 would be 3600.000000002 s, w=3601).
func TestBucketWindowIsCapacityTimesPeriodOverCount(t *testing.T) {
	for _, tc := range []struct {
		l    Limit
		want time.Duration
	}{
		{Token("k", Per(7, time.Hour), 7), time.Hour},
		{Token("k", PerSecond(10), 20), 2 * time.Second},
		{Leaky("k", Per(3, time.Second), 1), 333333334 * time.Nanosecond},
		{Leaky("k", Per(100, time.Minute), 17), 10200 * time.Millisecond},
		{Token("k", Per(1, 24*time.Hour), 1<<40), 0}, // longer than a time.Duration holds
		{Token("k", Per(0, time.Second), 5), 0},      // an invalid rate
		{Fixed("k", 5, time.Hour), time.Hour},
		{Sliding("k", 5, 90*time.Second), 90 * time.Second},
		{Policy("p", "s"), 0},
	} {
		if got := tc.l.Window(); got != tc.want {
			t.Errorf("%v %v quota %d: Window = %v; want %v", tc.l.Algorithm(), tc.l.Rate(), tc.l.Quota(), got, tc.want)
		}
	}
}

// Quota is a bucket's capacity or a window's limit, and nothing for a policy, whose parameters
// the server holds.
func TestQuotaIsCapacityOrWindowLimit(t *testing.T) {
	for _, tc := range []struct {
		l    Limit
		want int64
	}{
		{Token("k", PerSecond(10), 20), 20},
		{Leaky("k", PerSecond(10), 3), 3},
		{Log("k", 9, time.Second), 9},
		{Policy("p", "s"), 0},
	} {
		if got := tc.l.Quota(); got != tc.want {
			t.Errorf("%v: Quota = %d; want %d", tc.l.Algorithm(), got, tc.want)
		}
	}
}

package commands

import (
	"context"
	"strconv"
	"testing"
)

// The counts by policy keep an entry per series, not per policy: a table
// of many policies (one per API key) counted under _other does not grow a
// stripe's map, which every flush of a batch reads.
func TestPolicyStatsKeepAnEntryPerSeriesNotPerPolicy(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	ctx := context.Background()
	const n = maxPolicyNames + 1000
	pipe := rdb.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Do(ctx, "RL.POLICY", "SET", "p"+strconv.Itoa(i), "TOKEN", "1/m", 1)
	}
	for i := 0; i < n; i++ {
		pipe.Do(ctx, "RL.CHECK", "p"+strconv.Itoa(i), "s")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range srv.h.polStats.stripes {
		st := &srv.h.polStats.stripes[i]
		st.mu.Lock()
		size := len(st.m)
		st.mu.Unlock()
		if size > maxPolicyNames+1 {
			t.Fatalf("stripe %d holds %d entries after %d policies; want at most %d (the series)", i, size, n, maxPolicyNames+1)
		}
	}
	var other int64
	for _, st := range srv.h.PolicyStats() {
		if st.Name == otherPolicies {
			other = st.Allowed
		}
	}
	if other != n-maxPolicyNames {
		t.Fatalf("%s admitted %d; want %d", otherPolicies, other, n-maxPolicyNames)
	}
}

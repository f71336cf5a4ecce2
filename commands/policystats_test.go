package commands

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestPolicyStatsGiveSeriesToTheFirst256PoliciesOnly(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	ctx := context.Background()
	const n = maxPolicyNames + 44
	pipe := rdb.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Do(ctx, "RL.POLICY", "SET", "p"+strconv.Itoa(i), "TOKEN", "1/m", 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*redis.Client{rdb, srv.client(t, proto(3))} { // two connections, maybe two stripes
		pipe := c.Pipeline()
		for i := 0; i < n; i++ {
			pipe.Do(ctx, "RL.CHECK", "p"+strconv.Itoa(i), "s")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stats := srv.h.PolicyStats()
	if len(stats) != maxPolicyNames+1 {
		t.Fatalf("%d policies have figures; want %d and %q", len(stats), maxPolicyNames, otherPolicies)
	}
	var allowed, denied int64
	for _, st := range stats {
		allowed += st.Allowed
		denied += st.Denied
		want := int64(1)
		if st.Name == otherPolicies {
			want = n - maxPolicyNames
		}
		if st.Allowed != want || st.Denied != want {
			t.Errorf("%s: %d allowed, %d denied; want %d and %d", st.Name, st.Allowed, st.Denied, want, want)
		}
	}
	if allowed != n || denied != n {
		t.Errorf("%d allowed, %d denied in all; want %d each", allowed, denied, n)
	}
}

// TestPolicyStatsCountEveryDecisionOfAPipelineOfManyPolicies interleaves
// checks of more policies than a batch keeps counts for, each several
// times, so that a batch's counts are found again among others and
// flushed in the middle of a pipeline.
func TestPolicyStatsCountEveryDecisionOfAPipelineOfManyPolicies(t *testing.T) {
	srv := startServer(t, testConfig{})
	rdb := srv.client(t, proto(2))
	ctx := context.Background()
	for _, pols := range []int{12, 40} {
		const rounds = 5
		pipe := rdb.Pipeline()
		for i := 0; i < pols; i++ {
			pipe.Do(ctx, "RL.POLICY", "SET", "m"+strconv.Itoa(pols)+"-"+strconv.Itoa(i), "TOKEN", "1/m", 2)
		}
		for r := 0; r < rounds; r++ {
			for i := 0; i < pols; i++ {
				pipe.Do(ctx, "RL.CHECK", "m"+strconv.Itoa(pols)+"-"+strconv.Itoa(i), "s")
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		got := map[string]PolicyStat{}
		for _, st := range srv.h.PolicyStats() {
			got[st.Name] = st
		}
		for i := 0; i < pols; i++ {
			name := "m" + strconv.Itoa(pols) + "-" + strconv.Itoa(i)
			// a burst of 2: the first two rounds admitted, the rest denied
			if st := got[name]; st.Allowed != 2 || st.Denied != rounds-2 {
				t.Errorf("%s: %d allowed, %d denied; want 2 and %d", name, st.Allowed, st.Denied, rounds-2)
			}
		}
	}
}

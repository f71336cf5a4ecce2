package metrics

import (
	"testing"
)

func TestScrapeCountsDecisionsByPolicyWithShadowWouldBeDenials(t *testing.T) {
	f := start(t)
	if err := f.obs.Attach(f.h); err != nil {
		t.Fatal(err)
	}
	do := func(args ...any) {
		t.Helper()
		if err := f.rdb.Do(t.Context(), args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	do("RL.POLICY", "SET", "strict", "TOKEN", "1/m", 2)
	do("RL.POLICY", "SET", "trial", "TOKEN", "1/m", 1, "SHADOW")
	for i := 0; i < 5; i++ {
		do("RL.CHECK", "strict", "alice") // 2 allowed, 3 denied
	}
	for i := 0; i < 4; i++ {
		do("RL.CHECK", "trial", "bob") // 4 admitted, 3 of them denied by the limit
	}
	do("RL.CHECK", "strict", "carol", "trial", "carol") // one pair each, both admitted
	fams := scrape(t, f)
	for _, w := range []struct {
		name   string
		labels []string
		v      float64
	}{
		{"sluice_policy_decisions_total", []string{"policy", "strict", "outcome", "allowed"}, 3},
		{"sluice_policy_decisions_total", []string{"policy", "strict", "outcome", "denied"}, 3},
		{"sluice_policy_decisions_total", []string{"policy", "trial", "outcome", "allowed"}, 5},
		{"sluice_policy_decisions_total", []string{"policy", "trial", "outcome", "denied"}, 0},
		{"sluice_policy_shadow_would_deny_total", []string{"policy", "trial"}, 3},
		{"sluice_policy_shadow_would_deny_total", []string{"policy", "strict"}, 0},
	} {
		if got, ok := value(fams, w.name, w.labels...); !ok || got != w.v {
			t.Errorf("%s%v = %v (present %v); want %v", w.name, w.labels, got, ok, w.v)
		}
	}
}

package policy

import (
	"testing"

	"github.com/sluice-rl/sluice/algorithms"
)

// The hot path of RL.MATCH and the RLS front end: Plan and Compose reuse
// their buffers and allocate nothing per request.

var planShapes = map[string][]Descriptor{
	"key-only":       {desc("remote_address", "10.1.2.3")},
	"wildcard-token": {desc("path", "/api/users/42")},
	"nested":         {desc("user", "u-1234", "tier", "free")},
	"shared":         {desc("files", "files/a.pdf")},
	"override":       {{Entries: desc("remote_address", "10.1.2.3").Entries, Limit: EnvoyLimit{100, UnitMinute}}},
	"three":          {desc("remote_address", "10.1.2.3"), desc("user", "u-1", "tier", "free"), desc("plan", "upgrade")},
	"no-rule":        {desc("nothing", "here")},
}

func TestPlanAndComposeDoNotAllocate(t *testing.T) {
	rs := fileRules(t, matchRules)
	var p Plan
	var resp Response
	for name, ds := range planShapes {
		outcomes := make([]algorithms.Outcome, len(ds))
		for i := range outcomes {
			outcomes[i].Result = algorithms.Result{Allowed: true, Limit: 2, Remaining: 1}
		}
		run := func() {
			if err := rs.Plan(&p, []byte("api"), 1, ds); err != nil {
				t.Fatal(err)
			}
			if err := Compose(&resp, p.Items, outcomes, t0); err != nil {
				t.Fatal(err)
			}
		}
		run() // grow the buffers
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Errorf("%s: Plan+Compose allocate %v times per request", name, n)
		}
	}
}

func benchmarkPlan(b *testing.B, shape string) {
	rs, err := Parse([]File{{Name: "rules.yaml", Data: []byte(matchRules)}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ds := planShapes[shape]
	domain := []byte("api")
	var p Plan
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := rs.Plan(&p, domain, 1, ds); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlanOneDescriptor(b *testing.B)         { benchmarkPlan(b, "key-only") }
func BenchmarkPlanOneDescriptorWildcard(b *testing.B) { benchmarkPlan(b, "wildcard-token") }
func BenchmarkPlanOneDescriptorNested(b *testing.B)   { benchmarkPlan(b, "nested") }
func BenchmarkPlanThreeDescriptors(b *testing.B)      { benchmarkPlan(b, "three") }

func BenchmarkCompose(b *testing.B) {
	rs, err := Parse([]File{{Name: "rules.yaml", Data: []byte(matchRules)}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var p Plan
	if err := rs.Plan(&p, []byte("api"), 1, planShapes["key-only"]); err != nil {
		b.Fatal(err)
	}
	outcomes := []algorithms.Outcome{{Result: algorithms.Result{Allowed: true, Limit: 2, Remaining: 1}}}
	var resp Response
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Compose(&resp, p.Items, outcomes, t0); err != nil {
			b.Fatal(err)
		}
	}
}

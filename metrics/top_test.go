package metrics

import (
	"context"
	"strconv"
	"testing"
)

func TestScrapeExportsTopKeysByRankWithoutNames(t *testing.T) {
	f := start(t)
	if err := f.obs.Attach(f.h); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// tenant:a: 1 admitted, 4 denied; tenant:b: 1 admitted, 2 denied;
	// twelve more keys admitted once each.
	pipe := f.rdb.Pipeline()
	for i := 0; i < 5; i++ {
		pipe.Do(ctx, "RL.TOKEN", "tenant:a", "1/m", 1)
	}
	for i := 0; i < 3; i++ {
		pipe.Do(ctx, "RL.TOKEN", "tenant:b", "1/m", 1)
	}
	for i := 0; i < 12; i++ {
		pipe.Do(ctx, "RL.TOKEN", "tenant:other"+strconv.Itoa(i), "1/m", 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, f)
	for _, w := range []struct {
		list, rank string
		v          float64
	}{
		{"denied", "1", 4}, {"denied", "2", 2}, {"decisions", "1", 5}, {"decisions", "2", 3}, {"decisions", "10", 1},
	} {
		got, ok := value(fams, "sluice_top_keys_count", "list", w.list, "rank", w.rank)
		if !ok || got != w.v {
			t.Errorf("sluice_top_keys_count{list=%q,rank=%q} = %v (present %v); want %v", w.list, w.rank, got, ok, w.v)
		}
		if e, ok := value(fams, "sluice_top_keys_count_error", "list", w.list, "rank", w.rank); !ok || e != 0 {
			t.Errorf("sluice_top_keys_count_error{list=%q,rank=%q} = %v (present %v); want 0", w.list, w.rank, e, ok)
		}
	}
	// ranks are bounded, and only ranks that exist are exported
	if n := len(fams["sluice_top_keys_count"].Metric); n != 2+TopRanks {
		t.Errorf("%d sluice_top_keys_count series; want 2 denied and %d decisions", n, TopRanks)
	}
	for _, m := range fams["sluice_top_keys_count"].Metric {
		for _, l := range m.Label {
			if l.GetName() != "list" && l.GetName() != "rank" {
				t.Errorf("label %s=%q: only list and rank are labels", l.GetName(), l.GetValue())
			}
		}
	}
}

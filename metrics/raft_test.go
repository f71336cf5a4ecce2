package metrics

import (
	"testing"
)

func TestScrapeHasTheRaftEventsOfAGroupMember(t *testing.T) {
	f := start(t)
	err := f.obs.AttachRaft(func() RaftEvents {
		return RaftEvents{LeaderChanges: 2, Forwarded: 7, ForwardedOps: 30,
			ApplyBounds: []float64{0.001, 0.002, 0.004}, ApplyCounts: []uint64{5, 0, 3, 1}, ApplySum: 0.05}
	})
	if err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, f)
	for _, w := range []struct {
		name string
		v    float64
	}{
		{"sluice_raft_leader_changes_total", 2}, {"sluice_raft_forwarded_submissions_total", 7},
		{"sluice_raft_forwarded_operations_total", 30},
	} {
		if got, ok := value(fams, w.name); !ok || got != w.v {
			t.Errorf("%s = %v (present %v); want %v", w.name, got, ok, w.v)
		}
	}
	h := fams["sluice_raft_apply_duration_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 9 || h.GetSampleSum() != 0.05 {
		t.Errorf("apply histogram: count %d sum %v; want 9 and 0.05", h.GetSampleCount(), h.GetSampleSum())
	}
	want := []uint64{5, 5, 8, 9} // and +Inf
	for i, b := range h.GetBucket() {
		if b.GetCumulativeCount() != want[i] {
			t.Errorf("bucket le=%v: %d; want %d", b.GetUpperBound(), b.GetCumulativeCount(), want[i])
		}
	}
}

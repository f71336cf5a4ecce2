package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
	"github.com/sluice-rl/sluice/keyslot"
)

// A SlotDecider on any node, a follower included, decides each key on the
// group that owns its slot, exactly; an all-or-nothing group across slots
// is refused whole.
func TestSlotDeciderDecidesOnTheOwningGroup(t *testing.T) {
	procs := newShardedCluster(t)
	limit := algorithms.Limit{Algo: algorithms.Token, Count: 5, Period: int64(time.Hour) / 5}
	var keys []string
	for k := 0; len(keys) < 6; k++ {
		keys = append(keys, fmt.Sprintf("user:%d", k))
	}
	groups := map[int]bool{}
	for _, k := range keys {
		groups[1+keyslot.Of([]byte(k))/8192] = true
	}
	if len(groups) != 2 {
		t.Fatalf("keys %q hit groups %v", keys, groups)
	}
	var via *Node // a follower of group 1
	for _, p := range procs {
		if p.group == 1 && !p.data.Ready() {
			via = p.data
			break
		}
	}
	d := NewSlotDecider(via)
	admitted := map[string]int{}
	for i := 0; i < 7; i++ {
		reqs := make([]algorithms.Request, len(keys))
		for j, k := range keys {
			reqs[j] = algorithms.Request{Key: []byte(k), Limit: limit, N: 1}
		}
		out := make([]algorithms.Outcome, len(reqs))
		d.Decide(time.Now().UnixNano(), reqs, out)
		for j, o := range out {
			if o.Err != nil {
				t.Fatalf("Decide(%s) #%d: %v", keys[j], i, o.Err)
			}
			if o.Result.Allowed {
				admitted[keys[j]]++
			}
		}
	}
	for _, k := range keys {
		if admitted[k] != 5 {
			t.Errorf("%s admitted %d of 7 at capacity 5", k, admitted[k])
		}
	}
	// One all-or-nothing decision over two slots: CROSSSLOT, nothing taken.
	fresh := []algorithms.Request{
		{Key: []byte("fresh:a"), Limit: limit, N: 1, Group: 1},
		{Key: []byte("fresh:b"), Limit: limit, N: 1, Group: 1},
		{Key: []byte("{fresh:a}x"), Limit: limit, N: 1},
	}
	out := make([]algorithms.Outcome, len(fresh))
	d.Decide(time.Now().UnixNano(), fresh, out)
	for j := 0; j < 2; j++ {
		if out[j].Err == nil || !strings.HasPrefix(out[j].Err.Error(), "CROSSSLOT ") {
			t.Errorf("grouped request %d across slots: %+v; want CROSSSLOT", j, out[j])
		}
	}
	if out[2].Err != nil || !out[2].Result.Allowed || out[2].Result.Remaining != 4 {
		t.Errorf("the ungrouped request beside them: %+v; want allowed, 4 left", out[2])
	}
	peek := []algorithms.Request{{Key: []byte("fresh:a"), Limit: limit}, {Key: []byte("fresh:b"), Limit: limit}}
	d.Decide(time.Now().UnixNano(), peek, out[:2])
	for j := range peek {
		if out[j].Err != nil || out[j].Result.Remaining != 5 {
			t.Errorf("peek of %s after the refused group: %+v; want 5 left", peek[j].Key, out[j])
		}
	}
}

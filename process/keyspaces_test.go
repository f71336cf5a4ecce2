package process

import (
	"testing"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/lease"
	"github.com/sluice-rl/sluice/store"
)

// Only the local store may tell RL.CHECK that it holds no override: a
// replicated node applies a decision from its log after overrides that
// its own state may not have applied yet when the request is built, and a
// lease tier decides on its upstream's behalf. Either one answering false
// would leave a live override out of a decision.
func TestOnlyTheLocalStoreSaysItHoldsNoOverride(t *testing.T) {
	for name, ks := range map[string]commands.Keyspace{
		"cluster.Node": (*cluster.Node)(nil),
		"lease.Tier":   (*lease.Tier)(nil),
	} {
		if _, ok := ks.(commands.OverrideHolder); ok {
			t.Errorf("%s is a commands.OverrideHolder; want it to name every override key", name)
		}
	}
	var ks commands.Keyspace = store.New(1)
	h, ok := ks.(commands.OverrideHolder)
	if !ok {
		t.Fatal("store.Store is not a commands.OverrideHolder")
	}
	if h.MayHoldOverrides() {
		t.Error("a new store MayHoldOverrides() = true; want false")
	}
}

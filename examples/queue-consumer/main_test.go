package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/client/sluicetest"
)

// The example against a real sluice, with the seller's limit scaled down so that it runs in
// seconds: 20 calls per second shared by 16 consumers for 3 s, paced at 15 per second. The
// reserve of 5 calls a second absorbs a third of a second of lateness in the consumers' timers,
// as the default reserve of 1 call absorbs 0.6 s at 100 a minute: a loaded 2-core machine
// running -race delays timers by far more than the 1/19 s that a reserve of 1 would absorb at
// this scale. (The exact version, 100 a minute over 10 minutes of a virtual clock, is the
// client package's TestSixteenConsumersShareOneSellersLimitAndNoneStarves.)
func TestSixteenConsumersShareTheSellersLimit(t *testing.T) {
	srv := sluicetest.Start(t)
	var out bytes.Buffer
	rep, err := run(context.Background(), []string{"-addr", srv.Addr, "-count", "20", "-per", "1s", "-headroom", "5", "-for", "3s"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	total := 0
	for i, calls := range rep.calls {
		if len(calls) == 0 {
			t.Errorf("consumer %d never called the seller", i)
		}
		total += len(calls)
	}
	// The queue lets one call through every 1/15 s from the first: 46 in 3 s at most.
	if total > 46 || total < 35 {
		t.Errorf("%d calls in 3 s at 15/s; want close to 45 and never above 46", total)
	}
	// The calls' times as the consumers saw them, lateness included: the reserve of 5 calls a
	// second absorbs up to 1/3 s of bunching.
	if b := rep.busiest(); b > 20 {
		t.Errorf("%d calls within one second; the seller allows 20", b)
	}
	if !strings.Contains(out.String(), "paced at 15/s for a seller's 20/s") {
		t.Errorf("output:\n%s", out.String())
	}
}

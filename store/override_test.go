package store

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/algorithms"
)

// Overrides in the store: the decisions that name one, the kinds, the
// all-or-nothing group, transactions, and what a snapshot carries.

// words packs an override for these tests as policy.Override.Pack does.
func words(kind algorithms.OverrideKind, l algorithms.Limit, expire int64) [3]int64 {
	if expire == 0 {
		expire = math.MaxInt64
	}
	return [3]int64{expire, int64(kind) | int64(l.Algo)<<8 | l.Count<<16, l.Period}
}

func checkReq(subject string, l algorithms.Limit, n int64) algorithms.Request {
	return algorithms.Request{Key: []byte("pol:p:" + subject), Limit: l, N: n, Override: []byte("ovr:p:" + subject)}
}

func result(o algorithms.Outcome) string {
	if o.Err != nil {
		return o.Err.Error()
	}
	r := o.Result
	return fmt.Sprintf("%v %d %d %d %s", r.Allowed, r.Limit, r.Remaining, r.RetryAfter, r.Override)
}

func TestDecisionsNamingAnOverrideUseIt(t *testing.T) {
	st := New(4)
	policy := algorithms.Limit{Algo: algorithms.Fixed, Count: 3, Period: int64(time.Minute)}
	for _, o := range []struct {
		subject string
		w       [3]int64
	}{
		{"open", words(algorithms.OverrideUnlimited, algorithms.Limit{}, 0)},
		{"shut", words(algorithms.OverrideDeny, algorithms.Limit{}, 0)},
		{"big", words(algorithms.OverrideLimit, algorithms.Limit{Algo: algorithms.Fixed, Count: 100, Period: int64(time.Minute)}, 0)},
		{"brief", words(algorithms.OverrideDeny, algorithms.Limit{}, t0+int64(time.Second))},
	} {
		if created, err := st.SetOverride(t0, []byte("ovr:p:"+o.subject), o.w); err != nil || !created {
			t.Fatalf("SetOverride %s = %v, %v", o.subject, created, err)
		}
	}
	for _, c := range []struct {
		at      int64
		subject string
		n       int64
		want    string
	}{
		{t0, "open", 10, "true 3 3 0 unlimited"},
		{t0, "shut", 1, "false 3 0 -1 deny"},
		{t0, "big", 5, "true 100 95 0 limit"},
		{t0, "none", 1, "true 3 2 0 none"},
		{t0, "brief", 1, "false 3 0 -1 deny"},
		{t0 + int64(time.Second), "brief", 1, "true 3 2 0 none"}, // expired
	} {
		reqs := []algorithms.Request{checkReq(c.subject, policy, c.n)}
		out := make([]algorithms.Outcome, 1)
		st.Decide(c.at, reqs, out)
		if got := result(out[0]); got != c.want {
			t.Errorf("%s n=%d: %s; want %s", c.subject, c.n, got, c.want)
		}
		if !bytes.Equal(reqs[0].Override, []byte("ovr:p:"+c.subject)) || reqs[0].Limit != policy {
			t.Fatalf("Decide changed the caller's request: %+v", reqs[0])
		}
	}
	// UNLIMITED and DENY never made state for their subjects.
	if n, _ := st.Exists(t0, [][]byte{[]byte("pol:p:open"), []byte("pol:p:shut")}); n != 0 {
		t.Fatalf("EXISTS of the overridden subjects' state = %d; want 0", n)
	}
}

func TestOverridesInAGroupAndABatch(t *testing.T) {
	st := New(8)
	policy := algorithms.Limit{Algo: algorithms.Fixed, Count: 3, Period: int64(time.Minute)}
	st.SetOverride(t0, []byte("ovr:p:shut"), words(algorithms.OverrideDeny, algorithms.Limit{}, 0))
	st.SetOverride(t0, []byte("ovr:p:open"), words(algorithms.OverrideUnlimited, algorithms.Limit{}, 0))
	// A group with a DENY member charges nobody.
	group := []algorithms.Request{checkReq("a", policy, 1), checkReq("shut", policy, 1)}
	group[0].Group, group[1].Group = 1, 1
	out := make([]algorithms.Outcome, 2)
	st.Decide(t0, group, out)
	if got := result(out[0]) + " | " + result(out[1]); got != "true 3 3 0 none | false 3 0 -1 deny" {
		t.Fatalf("group with a DENY member: %s", got)
	}
	// A group with an UNLIMITED member is carried out; the member is not counted.
	group[1] = checkReq("open", policy, 1)
	group[1].Group = 1
	st.Decide(t0, group, out)
	if got := result(out[0]) + " | " + result(out[1]); got != "true 3 2 0 none | true 3 3 0 unlimited" {
		t.Fatalf("group with an UNLIMITED member: %s", got)
	}
	// A batch longer than a run mixes them, in order.
	var reqs []algorithms.Request
	for i := 0; i < 40; i++ {
		reqs = append(reqs, checkReq([]string{"open", "shut", "x"}[i%3], policy, 1))
	}
	outs := make([]algorithms.Outcome, len(reqs))
	st.Decide(t0, reqs, outs)
	for i := range reqs {
		want := []string{"unlimited", "deny", "none"}[i%3]
		if outs[i].Err != nil || outs[i].Result.Override.String() != want {
			t.Fatalf("batch decision %d: %s; want mode %s", i, result(outs[i]), want)
		}
	}
}

func TestTransactionDecidesWithTheOverride(t *testing.T) {
	st := New(4)
	policy := algorithms.Limit{Algo: algorithms.Token, Count: 10, Period: int64(100 * time.Millisecond)}
	st.SetOverride(t0, []byte("ovr:p:vip"), words(algorithms.OverrideLimit, algorithms.Limit{Algo: algorithms.Token, Count: 500, Period: int64(time.Millisecond)}, 0))
	reqs := []algorithms.Request{checkReq("vip", policy, 1), checkReq("joe", policy, 1)}
	out := make([]algorithms.Outcome, 2)
	if ok, err := st.Transact(t0, nil, reqs, out, nil); !ok || err != nil {
		t.Fatalf("Transact = %v, %v", ok, err)
	}
	if got := result(out[0]) + " | " + result(out[1]); got != "true 500 499 0 limit | true 10 9 0 none" {
		t.Fatalf("transaction: %s", got)
	}
	if reqs[0].Limit != policy {
		t.Fatalf("Transact changed the caller's request: %+v", reqs[0])
	}
}

func TestOverrideOfAnotherAlgorithmReplacesTheState(t *testing.T) {
	st := New(1)
	policy := algorithms.Limit{Algo: algorithms.Token, Count: 10, Period: int64(100 * time.Millisecond)}
	out := make([]algorithms.Outcome, 1)
	st.Decide(t0, []algorithms.Request{checkReq("u", policy, 4)}, out)
	st.SetOverride(t0, []byte("ovr:p:u"), words(algorithms.OverrideLimit, algorithms.Limit{Algo: algorithms.Log, Count: 2, Period: int64(time.Second)}, 0))
	for i, want := range []string{"true 2 1 0 limit", "true 2 0 0 limit", "false 2 0 1000000000 limit"} {
		st.Decide(t0, []algorithms.Request{checkReq("u", policy, 1)}, out)
		if got := result(out[0]); got != want {
			t.Fatalf("decision %d under a LOG override of a TOKEN policy: %s; want %s", i, got, want)
		}
	}
	// A request naming no override still meets WRONGTYPE there.
	st.Decide(t0, []algorithms.Request{{Key: []byte("pol:p:u"), Limit: policy, N: 1}}, out)
	if out[0].Err != ErrWrongType {
		t.Fatalf("a plain request on another algorithm's state: %v; want WRONGTYPE", out[0].Err)
	}
}

func TestSetOverrideRefusals(t *testing.T) {
	st := New(1)
	st.Decide(t0, []algorithms.Request{token("ovr:p:taken", time.Second, 1, 1)}, make([]algorithms.Outcome, 1))
	if _, err := st.SetOverride(t0, []byte("ovr:p:taken"), words(algorithms.OverrideDeny, algorithms.Limit{}, 0)); err != ErrWrongType {
		t.Fatalf("SetOverride on a bucket's key: %v; want WRONGTYPE", err)
	}
	if _, err := st.SetOverride(t0, []byte("ovr:p:x"), [3]int64{math.MaxInt64, 0, 0}); err == nil {
		t.Fatal("SetOverride of words no override has: accepted")
	}
	if _, err := st.SetOverride(t0, []byte("ovr:p:x"), words(algorithms.OverrideDeny, algorithms.Limit{}, t0)); err == nil {
		t.Fatal("SetOverride expiring now: accepted")
	}
	if created, err := st.SetOverride(t0, []byte("ovr:p:x"), words(algorithms.OverrideDeny, algorithms.Limit{}, 0)); !created || err != nil {
		t.Fatalf("SetOverride = %v, %v", created, err)
	}
	if created, err := st.SetOverride(t0, []byte("ovr:p:x"), words(algorithms.OverrideUnlimited, algorithms.Limit{}, 0)); created || err != nil {
		t.Fatalf("SetOverride replacing one = %v, %v; want false, nil", created, err)
	}
}

func TestSnapshotCarriesOverridesToTheDecisions(t *testing.T) {
	st := New(2)
	st.SetOverride(t0, []byte("ovr:p:shut"), words(algorithms.OverrideDeny, algorithms.Limit{}, 0))
	var buf bytes.Buffer
	if err := st.snapshotAt(&buf, t0); err != nil {
		t.Fatal(err)
	}
	fresh := New(2)
	if err := fresh.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	out := make([]algorithms.Outcome, 1)
	fresh.Decide(t0, []algorithms.Request{checkReq("shut", algorithms.Limit{Algo: algorithms.Fixed, Count: 3, Period: int64(time.Minute)}, 1)}, out)
	if got := result(out[0]); got != "false 3 0 -1 deny" {
		t.Fatalf("after a restore: %s; want the DENY", got)
	}
}

// BenchmarkCheckBatch100kKeys: pipelines of 16 policy decisions over 100k
// subjects, each naming its override key, in a store without overrides,
// and in one holding 10,000 (every tenth subject's, a limit): the cost of
// the lookups.
func BenchmarkCheckBatch100kKeys(b *testing.B) {
	for _, overrides := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("overrides=%d", overrides), func(b *testing.B) {
			st := New(4)
			const nkeys = 100_000
			policy := algorithms.Limit{Algo: algorithms.Token, Count: 100, Period: int64(100 * time.Millisecond)}
			reqs := make([]algorithms.Request, nkeys)
			for i := range reqs {
				reqs[i] = checkReq(fmt.Sprintf("user:%08d", i), policy, 1)
				if i%10 == 0 && i/10 < overrides {
					st.SetOverride(t0, reqs[i].Override, words(algorithms.OverrideLimit,
						algorithms.Limit{Algo: algorithms.Token, Count: 1000, Period: int64(time.Millisecond)}, 0))
				}
			}
			out := make([]algorithms.Outcome, 16)
			batch := make([]algorithms.Request, 16)
			now := t0
			for i := 0; i < nkeys; i += 16 {
				st.Decide(now, reqs[i:min(i+16, nkeys)], out)
			}
			x := xorshift(88172645463325252)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += len(batch) {
				for j := range batch {
					batch[j] = reqs[x.next()%nkeys]
				}
				now += 1000
				st.Decide(now, batch, out)
			}
		})
	}
}

// TestOverridesChangingUnderDecisions: overrides set and deleted while
// other goroutines decide the same subjects, in batches and one by one;
// every outcome is one that some override (or none) gives, and -race
// finds nothing.
func TestOverridesChangingUnderDecisions(t *testing.T) {
	st := New(4)
	policy := algorithms.Limit{Algo: algorithms.Fixed, Count: 1 << 40, Period: int64(time.Hour)}
	subjects := []string{"a", "b", "c", "d", "e"}
	kinds := [][3]int64{
		words(algorithms.OverrideUnlimited, algorithms.Limit{}, 0),
		words(algorithms.OverrideDeny, algorithms.Limit{}, 0),
		words(algorithms.OverrideLimit, algorithms.Limit{Algo: algorithms.Token, Count: 1 << 40, Period: 1}, 0),
	}
	done := make(chan struct{})
	errs := make(chan string, 4)
	for g := 0; g < 3; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			out := make([]algorithms.Outcome, len(subjects))
			for i := 0; i < 2000; i++ {
				reqs := make([]algorithms.Request, 0, len(subjects))
				for _, s := range subjects {
					reqs = append(reqs, checkReq(s, policy, 1))
				}
				if g == 2 {
					reqs = reqs[:1]
				}
				st.Decide(t0+int64(i), reqs, out[:len(reqs)])
				for j := range reqs {
					r := out[j].Result
					ok := out[j].Err == nil && (r.Override == algorithms.OverrideUnlimited && r.Allowed ||
						r.Override == algorithms.OverrideDeny && !r.Allowed && r.RetryAfter == algorithms.NeverNS ||
						r.Override == algorithms.OverrideLimit && r.Allowed ||
						r.Override == algorithms.OverrideNone && r.Allowed)
					if !ok {
						select {
						case errs <- fmt.Sprintf("decision %d of %s: %s", i, subjects[j], result(out[j])):
						default:
						}
						return
					}
				}
			}
		}(g)
	}
	go func() {
		defer func() { done <- struct{}{} }()
		for i := 0; i < 5000; i++ {
			key := []byte("ovr:p:" + subjects[i%len(subjects)])
			if i%4 == 3 {
				st.Delete(t0, [][]byte{key})
				continue
			}
			if _, err := st.SetOverride(t0, key, kinds[i%len(kinds)]); err != nil {
				errs <- err.Error()
				return
			}
		}
	}()
	for range 4 {
		<-done
	}
	select {
	case e := <-errs:
		t.Fatal(e)
	default:
	}
}

// MayHoldOverrides turns true with the first override the store holds, by
// whichever path it comes (RL.OVERRIDE, a snapshot, the append-only log),
// and stays true once it is deleted; a snapshot or a log without one
// leaves it false.
func TestMayHoldOverridesFromTheFirstOverrideOn(t *testing.T) {
	deny := words(algorithms.OverrideDeny, algorithms.Limit{}, 0)
	st := New(2)
	decide(st, t0, checkReq("a", algorithms.Limit{Algo: algorithms.Fixed, Count: 3, Period: int64(time.Minute)}, 1))
	if st.MayHoldOverrides() {
		t.Fatal("MayHoldOverrides() = true in a store that never held one")
	}
	var none bytes.Buffer
	if err := st.snapshotAt(&none, t0); err != nil {
		t.Fatal(err)
	}
	st.SetOverride(t0, []byte("ovr:p:shut"), deny)
	if !st.MayHoldOverrides() {
		t.Fatal("MayHoldOverrides() = false after SetOverride")
	}
	var with bytes.Buffer
	if err := st.snapshotAt(&with, t0); err != nil {
		t.Fatal(err)
	}
	st.Delete(t0, [][]byte{[]byte("ovr:p:shut")})
	if !st.MayHoldOverrides() {
		t.Fatal("MayHoldOverrides() = false after the override was deleted; want it never false again")
	}
	for name, c := range map[string]struct {
		snap *bytes.Buffer
		want bool
	}{"without": {&none, false}, "with": {&with, true}} {
		fresh := New(2)
		if err := fresh.Restore(c.snap); err != nil {
			t.Fatal(err)
		}
		if got := fresh.MayHoldOverrides(); got != c.want {
			t.Errorf("restored from a snapshot %s an override: MayHoldOverrides() = %v; want %v", name, got, c.want)
		}
	}

	logged, a, path := openLog(t, FsyncNo)
	decide(logged, t0, checkReq("a", algorithms.Limit{Algo: algorithms.Fixed, Count: 3, Period: int64(time.Minute)}, 1))
	a.Sync()
	if got, _ := loadLog(t, path, AOFLoadOptions{}); got.MayHoldOverrides() {
		t.Error("loaded from a log without an override: MayHoldOverrides() = true; want false")
	}
	logged.SetOverride(t0, []byte("ovr:p:shut"), deny)
	a.Close()
	if got, _ := loadLog(t, path, AOFLoadOptions{}); !got.MayHoldOverrides() {
		t.Error("loaded from a log with an override: MayHoldOverrides() = false; want true")
	}
}

package shard

import (
	"errors"
	"fmt"
	"testing"
)

// fill inserts keys until the shard refuses one and returns how many fit.
func fill(t *testing.T, s *Shard, prefix string, tat, now int64, depleted bool) int {
	t.Helper()
	for i := 0; ; i++ {
		k := []byte(fmt.Sprintf("%s%06d", prefix, i))
		ref, _ := s.Find(k, now)
		e := tokenEntry(tat)
		e.Depleted = depleted
		if err := s.Commit(ref, k, &e, now); err != nil {
			if !errors.Is(err, ErrOOM) {
				t.Fatalf("insert %d: %v; want ErrOOM", i, err)
			}
			return i
		}
		if i > 1_000_000 {
			t.Fatal("the limit never refused")
		}
	}
}

func TestNoEvictionRefusesNewKeysOnly(t *testing.T) {
	var s Shard
	const limit = 1 << 20
	s.SetLimit(limit, NoEviction)
	n := fill(t, &s, "k", t0+1000, t0, false)
	if st := s.Stats(); st.Used() > limit || st.Refused != 1 {
		t.Fatalf("used %d of %d, refused %d", st.Used(), limit, st.Refused)
	}
	if n < 20_000 {
		t.Fatalf("only %d token buckets fit in 1 MiB", n)
	}
	// Existing keys keep working; a record may grow while the arena has
	// room (the index is what filled here; growth past the arena's room is
	// TestGrowthAtTheLimitIsRefusedAndChangesNothing).
	put(t, &s, "k000001", tokenEntry(t0+2000), t0)
	put(t, &s, "k000002", Entry{Algo: 9, Expire: t0 + 2000, Ext: make([]int64, 100)}, t0)
	// Once entries expire, the room they held takes new keys.
	later := t0 + 1000
	if m := fill(t, &s, "new", later+1000, later, false); m < n/2 {
		t.Fatalf("after expiry only %d new keys fit; %d did before", m, n)
	}
}

func TestVolatileTTLEvictsNearestExpiryNeverDepleted(t *testing.T) {
	var s Shard
	s.SetLimit(1<<20, VolatileTTL)
	// Half the shard long-lived and depleted, half short-lived.
	for i := 0; ; i++ {
		k := fmt.Sprintf("k%06d", i)
		e := tokenEntry(t0 + 1_000_000)
		if i%2 == 0 {
			e = tokenEntry(t0 + 1000 + int64(i))
		} else {
			e.Depleted = true
		}
		ref, _ := s.Find([]byte(k), t0)
		if err := s.Commit(ref, []byte(k), &e, t0); err != nil {
			if s.stats.Evicted == 0 {
				t.Fatalf("refused before evicting anything: %v", err)
			}
			break
		}
		if s.stats.Evicted >= 2000 {
			break
		}
	}
	// Every evicted entry was a short-lived one: all depleted ones remain.
	for i := 1; i < 4000; i += 2 {
		if _, ok := get(&s, fmt.Sprintf("k%06d", i), t0); !ok {
			t.Fatalf("depleted k%06d was evicted", i)
		}
	}
	// With nothing but depleted entries left, a new key is refused.
	var d Shard
	d.SetLimit(1<<20, VolatileTTL)
	fill(t, &d, "d", t0+1_000_000, t0, true)
	if d.stats.Evicted != 0 || d.stats.Refused != 1 {
		t.Fatalf("all depleted: evicted %d, refused %d; want 0 and 1", d.stats.Evicted, d.stats.Refused)
	}
}

func TestVolatileTTLPrefersSoonestExpiry(t *testing.T) {
	var s Shard
	s.SetLimit(1<<20, VolatileTTL)
	n := 0
	for ; s.stats.Evicted == 0; n++ {
		k := fmt.Sprintf("k%06d", n)
		ttl := int64(1_000_000)
		if n%16 == 5 {
			ttl = 10 // one in every sample expires far sooner than the rest
		}
		put(t, &s, k, tokenEntry(t0+ttl), t0)
	}
	for i := 0; i < n; i++ {
		if i%16 != 5 {
			if _, ok := get(&s, fmt.Sprintf("k%06d", i), t0); !ok {
				t.Fatalf("evicted k%06d (TTL 1s) while entries with a 10ns TTL were there", i)
			}
		}
	}
}

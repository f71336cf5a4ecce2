package commands

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-rl/sluice/glob/globtest"
	"github.com/sluice-rl/sluice/internal/testutil"
)

// startRedis runs redis-server (testutil.StartRedis) until the test ends and returns a
// client of it; it skips the test when redis-server is not installed.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	r := testutil.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Network: r.Network, Addr: r.Addr, Protocol: 2, DisableIndentity: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestScanMatchAgreesWithRedis gives Redis 7 and sluice the same keys (every
// string of up to 3 bytes over an alphabet of pattern syntax, letters of
// both cases and bytes ≥ 0x80, and the strings of globtest.Cases) and compares
// KEYS pattern on Redis with a whole SCAN iteration with MATCH pattern on
// sluice, for 3,000 random patterns, those of globtest.Cases and 300 with long
// parts cut from 30 long keys; and checks
// globtest.Cases' answers against Redis.
func TestScanMatchAgreesWithRedis(t *testing.T) {
	ctx := context.Background()
	rds := startRedis(t)
	if v, _ := rds.Info(ctx, "server").Result(); !strings.Contains(v, "redis_version:7.") {
		t.Skipf("redis-server is not 7.x: its matcher may differ")
	}
	ts := startServer(t, testConfig{})
	slc := ts.client(t, proto(2))

	const alphabet = "ab]-\\*[?^Az\x80\xff"
	keys := []string{""}
	for n, from := 0, 0; n < 3; n++ {
		to := len(keys)
		for _, k := range keys[from:to] {
			for i := 0; i < len(alphabet); i++ {
				keys = append(keys, k+alphabet[i:i+1])
			}
		}
		from = to
	}
	for _, tc := range globtest.Cases {
		keys = append(keys, tc.Str)
	}
	r := rand.New(rand.NewPCG(5, 6))
	var long []string // patterns with long parts, cut from long keys
	for i := 0; i < 300; i++ {
		pat, str := globtest.LongCase(r)
		long = append(long, string(pat))
		if i%10 == 0 {
			keys = append(keys, string(str))
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	pipe := rds.Pipeline()
	for _, k := range keys {
		pipe.Set(ctx, k, 1, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	fill(t, slc, keys)
	for name, rdb := range map[string]*redis.Client{"Redis": rds, "sluice": slc} {
		if n := rdb.DBSize(ctx).Val(); n != int64(len(keys)) {
			t.Fatalf("%s holds %d keys; want %d", name, n, len(keys))
		}
	}

	for _, tc := range globtest.Cases {
		if tc.Pattern == "*" {
			continue // KEYS and SCAN answer a bare * without the matcher: every key
		}
		got, err := rds.Keys(ctx, tc.Pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(got, tc.Str) != tc.Want {
			t.Errorf("Redis: %q matches %q: %v; globtest.Cases says %v", tc.Pattern, tc.Str, !tc.Want, tc.Want)
		}
	}

	patterns := make([]string, 0, 3000+len(globtest.Cases)+len(long))
	for _, tc := range globtest.Cases {
		patterns = append(patterns, tc.Pattern)
	}
	patterns = append(patterns, long...)
	for len(patterns) < cap(patterns) {
		patterns = append(patterns, string(globtest.Rand(r, globtest.Alphabet, 7)))
	}
	matches := 0
	for _, pat := range patterns {
		want, err := rds.Keys(ctx, pat).Result()
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := scanAll(ctx, slc, pat, 1000)
		if pat == "" {
			got, _, err = scanAllMatchEmpty(ctx, slc)
		}
		if err != nil {
			t.Fatalf("SCAN MATCH %q: %v", pat, err)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("MATCH %q: sluice returns %q; Redis's KEYS %q", pat, got, want)
		}
		if len(want) > 0 {
			matches++
		}
	}
	t.Logf("%d patterns agree over %d keys; %d match some key", len(patterns), len(keys), matches)
}

// scanAllMatchEmpty is scanAll with MATCH "" (go-redis leaves an empty
// pattern out of the command).
func scanAllMatchEmpty(ctx context.Context, rdb *redis.Client) ([]string, int, error) {
	var all []string
	cursor := "0"
	for calls := 1; ; calls++ {
		v, err := rdb.Do(ctx, "SCAN", cursor, "MATCH", "", "COUNT", 1000).Slice()
		if err != nil {
			return all, calls, err
		}
		for _, k := range v[1].([]any) {
			all = append(all, k.(string))
		}
		if cursor = v[0].(string); cursor == "0" {
			return all, calls, nil
		}
	}
}

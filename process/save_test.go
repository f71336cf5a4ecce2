package process

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestConfigSaveSpeaksRedisPairs: CONFIG GET save answers in Redis's
// "seconds changes" pairs ("300 0": a save every 300 s whatever changed,
// as Redis does with 0 changes; "" when off), and CONFIG SET save takes
// Redis's pairs (the shortest period of several: a save at least as often
// as Redis would make one) as well as sluice's own seconds.
func TestConfigSaveSpeaksRedisPairs(t *testing.T) {
	p, err := Open(testOptions(t, "save", "300"))
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve()
	defer shutdown(t, p)
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), Protocol: 2, DisableIndentity: true})
	defer rdb.Close()
	ctx := context.Background()
	get := func() string {
		t.Helper()
		m, err := rdb.ConfigGet(ctx, "save").Result()
		if err != nil {
			t.Fatal(err)
		}
		return m["save"]
	}
	if got := get(); got != "300 0" {
		t.Fatalf("CONFIG GET save = %q; want %q", got, "300 0")
	}
	for _, c := range []struct{ set, want string }{
		{"3600 1 300 100 60 10000", "60 0"},
		{"900 1", "900 0"},
		{"120", "120 0"},
		{"", ""},
		{"0", ""},
		{"30 0", "30 0"},
	} {
		if err := rdb.ConfigSet(ctx, "save", c.set).Err(); err != nil {
			t.Fatalf("CONFIG SET save %q: %v", c.set, err)
		}
		if got := get(); got != c.want {
			t.Fatalf("CONFIG SET save %q, then CONFIG GET save = %q; want %q", c.set, got, c.want)
		}
	}
	for _, bad := range []string{"300 1 60", "x 1", "60 -1", "0 5"} {
		if err := rdb.ConfigSet(ctx, "save", bad).Err(); err == nil {
			t.Errorf("CONFIG SET save %q succeeded; want an error", bad)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Policies from --policies decided by RL.CHECK in a running process, while
// the rules change the way a Kubernetes ConfigMap volume changes them.

// configMap is a directory laid out as kubelet lays out a ConfigMap volume:
// the data in a ..<version> directory, a ..data link to it, and the visible
// names linking through ..data.
type configMap struct {
	t    *testing.T
	dir  string
	gen  int
	name string
}

func newConfigMap(t *testing.T, name, text string) *configMap {
	m := &configMap{t: t, dir: t.TempDir(), name: name}
	m.update(text)
	if err := os.Symlink(filepath.Join("..data", name), filepath.Join(m.dir, name)); err != nil {
		t.Fatal(err)
	}
	return m
}

// update writes text into a new version directory and swaps ..data to it
// with a rename, as kubelet does: no visible path changes.
func (m *configMap) update(text string) {
	m.gen++
	version := fmt.Sprintf("..2026_11_23_%02d", m.gen)
	if err := os.Mkdir(filepath.Join(m.dir, version), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.dir, version, m.name), []byte(text), 0o644); err != nil {
		m.t.Fatal(err)
	}
	tmp := filepath.Join(m.dir, "..data_tmp")
	if err := os.Symlink(version, tmp); err != nil {
		m.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(m.dir, "..data")); err != nil {
		m.t.Fatal(err)
	}
}

func tiers(free, pro int) string {
	return fmt.Sprintf("policies:\n  - name: free\n    algorithm: fixed\n    limit: %d\n    window: 1h\n"+
		"  - name: pro\n    algorithm: fixed\n    limit: %d\n    window: 1h\n", free, pro)
}

// TestCheckFollowsAConfigMapSwapUnderLoad: clients decide with RL.CHECK
// under two file policies while the ConfigMap's ..data link is swapped to
// new limits. No decision fails, every reply carries the old or the new
// limit of its policy, and once the reload is logged every reply carries
// the new one. The file's policies are read-only to RL.POLICY SET, and
// INFO policies describes the files.
func TestCheckFollowsAConfigMapSwapUnderLoad(t *testing.T) {
	m := newConfigMap(t, "tiers.yaml", tiers(100000, 200000))
	p := start(t, "--dir", t.TempDir(), "--save", "0", "--policies", m.dir)
	p.waitLog(t, `msg="rules loaded" files=1 domains=0 rules=0 policies=2`)
	rdb := client(t, p)
	ctx := context.Background()

	want := fmt.Sprintf("policy 'free' is read-only: it comes from the rules file %s", filepath.Join(m.dir, "tiers.yaml"))
	if err := rdb.Do(ctx, "RL.POLICY", "SET", "free", "FIXED", "1", "1h").Err(); err == nil || err.Error() != "ERR "+want {
		t.Fatalf("RL.POLICY SET free = %v; want ERR %s", err, want)
	}

	var (
		stop    atomic.Bool
		swapped atomic.Bool // set once the reload is logged
		wg      sync.WaitGroup
		mu      sync.Mutex
		faults  []string
		calls   atomic.Int64
	)
	fault := func(s string) {
		mu.Lock()
		if len(faults) < 10 {
			faults = append(faults, s)
		}
		mu.Unlock()
	}
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				after := swapped.Load()
				pipe := rdb.Pipeline()
				cmds := make([]*redis.Cmd, 0, 16)
				for j := 0; j < 16; j++ {
					pol := []string{"free", "pro"}[j%2]
					cmds = append(cmds, pipe.Do(ctx, "RL.CHECK", pol, fmt.Sprintf("u%d-%d", c, j)))
				}
				if _, err := pipe.Exec(ctx); err != nil {
					fault(err.Error())
					return
				}
				for j, cmd := range cmds {
					v, _ := cmd.Slice()
					limit, _ := v[1].(int64)
					old, now := int64(100000), int64(100)
					if j%2 == 1 {
						old, now = 200000, 200
					}
					if limit != now && (after || limit != old) {
						fault(fmt.Sprintf("reply %v (after the reload: %v)", v, after))
					}
				}
				calls.Add(16)
			}
		}(c)
	}
	time.Sleep(300 * time.Millisecond)
	m.update(tiers(100, 200))
	p.waitLog(t, `msg="the rules files changed: rules reloaded"`)
	swapped.Store(true)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if len(faults) > 0 {
		t.Fatalf("%d calls; faults: %s", calls.Load(), strings.Join(faults, "; "))
	}
	if calls.Load() == 0 {
		t.Fatal("no decision was made")
	}
	for name, want := range map[string]string{"policies_files": "2", "rules_loads": "2", "rules_failures": "0",
		"rules_last_reload_status": "ok", "rules_files": filepath.Join(m.dir, "tiers.yaml")} {
		if got := infoField(t, rdb, "policies", name); got != want {
			t.Errorf("INFO policies %s = %q; want %q", name, got, want)
		}
	}

	// A broken version is refused; RL.POLICY RELOAD says why, with the
	// position; the rules in force stay.
	m.update(tiers(100, 200) + "  - name: bad\n    algorithm: fixed\n    limit: 1\n    window: soon\n")
	p.waitLog(t, `the rules files changed and were refused`)
	err := rdb.Do(ctx, "RL.POLICY", "RELOAD").Err()
	if err == nil || !strings.Contains(err.Error(), "tiers.yaml:13:13: invalid limit: invalid window 'soon'") {
		t.Fatalf("RL.POLICY RELOAD = %v; want the file's error with its line", err)
	}
	v, err := rdb.Do(ctx, "RL.CHECK", "pro", "fresh").Slice()
	if err != nil || v[1] != int64(200) {
		t.Fatalf("RL.CHECK pro after a refused version = %v, %v; want limit 200", v, err)
	}
}

package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The log's store across kill -9: a node alone in its group has no peer to
// catch up from, so what it decides after a restart comes from its own
// --dir only.

// startAlone starts p as a group of one and waits until it decides.
func startAlone(t *testing.T, p *proc, extra ...string) {
	t.Helper()
	p.start(extra...)
	waitFor(t, 15*time.Second, func() bool { return p.info("role") == "leader" && p.info("ready") == "true" })
}

// logFiles reports whether p's --dir holds a bolt log and a raft-wal log.
func logFiles(t *testing.T, p *proc) (bolt, wal bool) {
	t.Helper()
	stat := func(name string) bool {
		_, err := os.Stat(filepath.Join(p.dir, "raft", name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}
	return stat("raft.db"), stat("wal")
}

func TestProcessWALKeepsAcknowledgedDecisionsAfterKill9(t *testing.T) {
	p := newProcs(t, 1)[0]
	startAlone(t, p, "--bootstrap", "yes")
	if bolt, wal := logFiles(t, p); bolt || !wal {
		t.Fatalf("a new node's --dir holds raft.db %v, wal/ %v; want wal/ only (the default store)", bolt, wal)
	}

	// Clients take tokens until the kill; each counts what it was told.
	const capacity, clients = 1_000_000, 4
	var mu sync.Mutex
	acked, unknown := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, PoolSize: 1, MaxRetries: -1,
				DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second})
			defer rdb.Close()
			for {
				pipe := rdb.Pipeline()
				cmds := make([]*redis.Cmd, 8)
				for j := range cmds {
					cmds[j] = pipe.Do(context.Background(), "RL.TOKEN", "wal", "1/h", capacity)
				}
				pipe.Exec(context.Background())
				mu.Lock()
				failed := false
				for _, c := range cmds {
					v, err := c.Slice()
					switch {
					case err == nil && len(v) == 5 && v[0] == int64(1):
						acked++
					case err == nil:
						t.Errorf("RL.TOKEN = %v; want admitted (capacity %d)", v, capacity)
					case strings.HasPrefix(err.Error(), "ERR"):
						t.Errorf("RL.TOKEN: %v", err)
					default:
						unknown++ // the kill broke the connection: applied or not
						failed = true
					}
				}
				mu.Unlock()
				if failed {
					return
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	p.kill()
	wg.Wait()
	if acked == 0 {
		t.Fatal("no decision was acknowledged before the kill")
	}

	startAlone(t, p)
	got := peek(t, p, "wal", capacity)
	lo, hi := int64(capacity-acked-unknown), int64(capacity-acked)
	if got < lo || got > hi {
		t.Fatalf("after kill -9 and a restart remaining = %d; want %d..%d (%d acknowledged, %d unknown)", got, lo, hi, acked, unknown)
	}
	t.Logf("%d acknowledged and %d unknown before the kill; remaining %d after the restart", acked, unknown, got)
	if bolt, wal := logFiles(t, p); bolt || !wal {
		t.Fatalf("after the restart the --dir holds raft.db %v, wal/ %v; want wal/ only", bolt, wal)
	}
}

func TestProcessBoltDirStaysBolt(t *testing.T) {
	p := newProcs(t, 1)[0]
	startAlone(t, p, "--bootstrap", "yes", "--raft-log-store", "bolt")
	const capacity = 100
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, PoolSize: 1, MaxRetries: -1})
	for i := 0; i < 5; i++ {
		if err := rdb.Do(context.Background(), "RL.TOKEN", "b", "1/h", capacity).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.Close()
	p.kill()

	// Restarted with the default store (wal), it keeps its raft.db.
	startAlone(t, p)
	if got := peek(t, p, "b", capacity); got != capacity-5 {
		t.Fatalf("after kill -9 and a restart without --raft-log-store remaining = %d; want %d", got, capacity-5)
	}
	if bolt, wal := logFiles(t, p); !bolt || wal {
		t.Fatalf("the restarted node's --dir holds raft.db %v, wal/ %v; want raft.db only", bolt, wal)
	}
}

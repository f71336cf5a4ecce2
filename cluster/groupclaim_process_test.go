package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-rl/sluice/keyslot"
)

// A second node of data group 2 started with --bootstrap yes instead of
// --join (a copied command line) starts a second group 2: it must not
// take the record of the group 2 the meta group knows, nor serve its
// slots, which the first group 2 serves.
func TestProcessSecondGroupOfTheSameNumberServesNothing(t *testing.T) {
	bin := buildSluice(t)
	base := t.TempDir()
	mk := func(id, ip string, g int) *proc {
		p := &proc{t: t, bin: bin, id: id, raftIP: ip, dir: base + "/" + id, logPath: base + "/" + id + ".log",
			portsPath: base + "/" + id + ".ports"}
		p.always = []string{"--cluster-group", fmt.Sprint(g), "--cluster-groups", "2"}
		return p
	}
	g1, g2, dup := mk("g1n1", "127.0.0.11", 1), mk("g2n1", "127.0.0.21", 2), mk("g2n9", "127.0.0.29", 2)
	all := []*proc{g1, g2, dup}
	t.Cleanup(func() {
		for _, p := range all {
			p.kill()
		}
		if t.Failed() {
			for _, p := range all {
				t.Logf("--- %s log:\n%s", p.id, p.logTail())
			}
		}
	})
	g1.start("--bootstrap", "yes")
	waitFor(t, 15*time.Second, func() bool { return g1.info("ready") == "true" })
	g2.start("--bootstrap", "yes", "--cluster-seed", g1.addr())
	waitFor(t, 20*time.Second, func() bool { return clusterComplete(g1, 2, 1) && clusterComplete(g2, 2, 1) })

	dup.start("--bootstrap", "yes", "--cluster-seed", g1.addr())
	waitFor(t, 15*time.Second, func() bool { return dup.info("ready") == "true" })
	key := "k"
	for keyslot.Of([]byte(key)) < keyslot.Slots/2 {
		key += "k"
	}
	want := fmt.Sprintf("MOVED %d %s", keyslot.Of([]byte(key)), g2.addr())
	ctx := context.Background()
	// Several duty periods: a second group 2 that claims the number has
	// reported itself and appended the slots by then.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		for _, p := range all {
			checkAlive(t)
			rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
			err := rdb.Do(ctx, "RL.TOKEN", key, "1/h", 5).Err()
			rdb.Close()
			switch {
			case p == g2 && err != nil:
				t.Fatalf("%s on group 2's node: %v", key, err)
			case p == dup && err == nil:
				t.Fatalf("%s on %s, the second group 2, was served; want a refusal", key, p.id)
			case p == g1 && (err == nil || !strings.HasPrefix(err.Error(), want)):
				t.Fatalf("%s on %s: %v; want %s", key, p.id, err, want)
			}
		}
	}
	if log := dup.logTail(); !strings.Contains(log, "another group holds this data group's number") || !strings.Contains(log, "g2n1") {
		t.Fatalf("%s's log does not say why it serves nothing:\n%s", dup.id, log)
	}
}

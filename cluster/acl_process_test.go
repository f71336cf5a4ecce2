package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The ACL users of a group go through the Raft log: a change made on any
// node is in force on every node, survives a restart, and reaches a node
// that joins later.

// startGroupOf starts ps[0] with --bootstrap yes and the others joining
// through it, each with its flags from extra (nil: none), and waits until
// all are members.
func startGroupOf(t *testing.T, ps []*proc, extra func(p *proc) []string) {
	t.Helper()
	flags := func(p *proc) []string {
		if extra == nil {
			return nil
		}
		return extra(p)
	}
	ps[0].start(append([]string{"--bootstrap", "yes"}, flags(ps[0])...)...)
	waitFor(t, 10*time.Second, func() bool { return ps[0].info("role") == "leader" && ps[0].info("ready") == "true" })
	for _, p := range ps[1:] {
		p.start(append([]string{"--join", ps[0].addr()}, flags(p)...)...)
	}
	waitFor(t, 15*time.Second, func() bool {
		return ps[0].info("members") == "3" && ps[1].info("leader_id") != "" && ps[2].info("leader_id") != ""
	})
}

// asUser returns a client of p that authenticates as user.
func asUser(t *testing.T, p *proc, user, pass string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: p.addr(), Username: user, Password: pass, Protocol: 2,
		DialTimeout: time.Second, ReadTimeout: 3 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// canAuth reports whether user/pass authenticates on p.
func canAuth(p *proc, user, pass string) bool {
	c := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, DialTimeout: time.Second,
		ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	return c.Do(context.Background(), "AUTH", user, pass).Err() == nil
}

// checkTenantA checks, on every node, that tenant-a authenticates, decides
// on its own keys, and gets NOPERM for another tenant's key and for an
// admin command.
func checkTenantA(t *testing.T, ps []*proc, pass string) {
	t.Helper()
	ctx := context.Background()
	for _, p := range ps {
		waitFor(t, 10*time.Second, func() bool { return canAuth(p, "tenant-a", pass) })
		c := asUser(t, p, "tenant-a", pass)
		if err := c.Do(ctx, "RL.TOKEN", "tenant-a:1", "10/s", "10").Err(); err != nil {
			t.Fatalf("%s: tenant-a on its own key: %v", p.id, err)
		}
		err := c.Do(ctx, "RL.TOKEN", "tenant-b:1", "10/s", "10").Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Fatalf("%s: tenant-a on tenant-b's key: %v, want NOPERM", p.id, err)
		}
		err = c.Do(ctx, "FLUSHALL").Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Fatalf("%s: tenant-a FLUSHALL: %v, want NOPERM", p.id, err)
		}
		c.Close()
	}
}

func followerOf(ps []*proc) *proc {
	for _, p := range ps {
		if p.info("role") == "follower" {
			return p
		}
	}
	return nil
}

func TestProcessACLSetUserOnAFollowerReachesEveryNode(t *testing.T) {
	ctx := context.Background()
	ps := newProcs(t, 4)
	startGroupOf(t, ps[:3], nil)
	fo := followerOf(ps[:3])
	if fo == nil {
		t.Fatal("no follower")
	}
	admin := asUser(t, fo, "", "")
	if err := admin.Do(ctx, "ACL", "SETUSER", "tenant-a", "on", ">pa", "~tenant-a:*", "+@limiter").Err(); err != nil {
		t.Fatalf("ACL SETUSER on follower %s: %v", fo.id, err)
	}
	// The forwarding follower has applied it when the reply comes.
	if !canAuth(fo, "tenant-a", "pa") {
		t.Fatalf("AUTH on %s right after its ACL SETUSER failed", fo.id)
	}
	checkTenantA(t, ps[:3], "pa")

	// A bad rule is refused on the follower, with Redis's words, and
	// changes nothing anywhere.
	err := admin.Do(ctx, "ACL", "SETUSER", "tenant-a", "+nosuch").Err()
	if err == nil || err.Error() != "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL" {
		t.Fatalf("bad rule: %v", err)
	}

	// Every node lists the same users.
	want := ""
	waitFor(t, 10*time.Second, func() bool {
		lists := map[string]bool{}
		for _, p := range ps[:3] {
			l, err := asUser(t, p, "", "").Do(ctx, "ACL", "LIST").StringSlice()
			if err != nil {
				return false
			}
			want = strings.Join(l, "\n")
			lists[want] = true
		}
		return len(lists) == 1
	})
	if !strings.Contains(want, "user tenant-a on #") {
		t.Fatalf("ACL LIST: %q", want)
	}

	// A follower snapshots, is killed and restarts: the user comes back
	// from its snapshot.
	if err := admin.Do(ctx, "RAFT.SNAPSHOT").Err(); err != nil {
		t.Fatalf("RAFT.SNAPSHOT: %v", err)
	}
	fo.kill()
	fo.start()
	checkTenantA(t, []*proc{fo}, "pa")

	// A new node joins and gets the user.
	ps[3].start("--join", ps[0].addr())
	waitFor(t, 15*time.Second, func() bool { return ps[3].info("leader_id") != "" })
	checkTenantA(t, ps[3:], "pa")

	// ACL DELUSER on another node removes the user everywhere.
	var other *proc
	for _, p := range ps[:3] {
		if p != fo {
			other = p
			break
		}
	}
	n, err := asUser(t, other, "", "").Do(ctx, "ACL", "DELUSER", "tenant-a").Int()
	if err != nil || n != 1 {
		t.Fatalf("ACL DELUSER on %s: %d %v", other.id, n, err)
	}
	for _, p := range ps {
		waitFor(t, 10*time.Second, func() bool { return !canAuth(p, "tenant-a", "pa") })
	}
}

// The leader's --aclfile seeds the group; a follower's own --aclfile serves
// until the group's users arrive, and ACL LOAD on that follower makes its
// file the group's; ACL SAVE writes the node's own file.
func TestProcessACLFileOfTheLeaderSeedsTheGroupAndACLLoadReplicates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	leaderFile := filepath.Join(dir, "leader.acl")
	followerFile := filepath.Join(dir, "follower.acl")
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(leaderFile, "user default on nopass ~* &* +@all\nuser tenant-a on >pa ~tenant-a:* resetchannels -@all +@limiter\n")
	write(followerFile, "user default on nopass ~* &* +@all\nuser ops on >po ~* resetchannels +@all -@dangerous\n")
	ps := newProcs(t, 3)
	startGroupOf(t, ps, func(p *proc) []string {
		switch p {
		case ps[0]:
			return []string{"--aclfile", leaderFile}
		case ps[2]:
			return []string{"--aclfile", followerFile}
		}
		return nil
	})
	checkTenantA(t, ps, "pa")
	// The group's users are the leader's file's: ops, which only n3's
	// file has, is not one of them.
	if canAuth(ps[2], "ops", "po") {
		t.Fatal("n3 kept its own file's user after the group's users arrived")
	}

	// ACL LOAD on n3 reads its file, and every node gets its users.
	if err := asUser(t, ps[2], "", "").Do(ctx, "ACL", "LOAD").Err(); err != nil {
		t.Fatalf("ACL LOAD on n3: %v", err)
	}
	for _, p := range ps {
		waitFor(t, 10*time.Second, func() bool { return canAuth(p, "ops", "po") && !canAuth(p, "tenant-a", "pa") })
	}

	// ACL SETUSER through n2 (no aclfile), then ACL SAVE on n1 writes the
	// group's users to n1's file.
	if err := asUser(t, ps[1], "", "").Do(ctx, "ACL", "SETUSER", "tenant-b", "on", ">pb", "~tenant-b:*", "+@limiter").Err(); err != nil {
		t.Fatalf("ACL SETUSER on n2: %v", err)
	}
	waitFor(t, 10*time.Second, func() bool { return canAuth(ps[0], "tenant-b", "pb") })
	if err := asUser(t, ps[0], "", "").Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatalf("ACL SAVE on n1: %v", err)
	}
	text, err := os.ReadFile(leaderFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "user ops on #") || !strings.Contains(string(text), "user tenant-b on #") ||
		strings.Contains(string(text), "tenant-a") {
		t.Fatalf("n1's file after ACL SAVE:\n%s", text)
	}
	// ACL SAVE on n2, which has no file, is refused.
	if err := asUser(t, ps[1], "", "").Do(ctx, "ACL", "SAVE").Err(); err == nil {
		t.Fatal("ACL SAVE without an aclfile succeeded")
	}
}

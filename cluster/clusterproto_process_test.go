package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis Cluster protocol on a real 3-process group: every cluster
// client connects through any member, sees one shard owning all 16384
// slots with the leader as master, and decides exactly.

// clientMatrix is the client matrix's directory (compat/clients), whose
// cluster scripts run here against a group.
const clientMatrix = "../compat/clients"

// offsets matches CLUSTER SHARDS's replication offsets as go-redis prints
// them.
var offsets = regexp.MustCompile(`replication-offset \d+`)

// clusterReply returns CLUSTER sub's reply as text, asked of p.
func clusterReply(t *testing.T, p *proc, sub string) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	v, err := rdb.Do(context.Background(), "CLUSTER", sub).Result()
	if err != nil {
		t.Fatalf("CLUSTER %s on %s: %v", sub, p.id, err)
	}
	return fmt.Sprint(v)
}

// commandCalls returns a command's calls from p's INFO commandstats.
func commandCalls(t *testing.T, p *proc, name string) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	text, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "cmdstat_"+name+":calls="); ok {
			return strings.SplitN(v, ",", 2)[0]
		}
	}
	return "0"
}

func TestProcessClusterProtocol(t *testing.T) {
	buildSluice(t)
	ps, _ := startProcGroup(t, false)
	ld := leaderOf(ps)
	if ld == nil {
		t.Fatal("no leader")
	}
	followers := othersThan(ps, ld)
	ctx := context.Background()

	// Every member reports the same shard: the leader first, then the
	// followers, all at their RESP addresses.
	waitFor(t, 10*time.Second, func() bool {
		for _, p := range ps {
			if strings.Count(clusterReply(t, p, "SLOTS"), "127.0.0.1") != 3 {
				return false // its table has not yet applied every member's address
			}
		}
		return true
	})
	slots := clusterReply(t, ps[0], "SLOTS")
	if !strings.HasPrefix(slots, fmt.Sprintf("[[0 16383 [127.0.0.1 %d %s []]", ld.port, NodeID(ld.id))) {
		t.Fatalf("CLUSTER SLOTS = %s; want the leader %s first", slots, ld.id)
	}
	shards := clusterReply(t, ps[0], "SHARDS")
	for _, p := range ps {
		if got := clusterReply(t, p, "SLOTS"); got != slots {
			t.Errorf("CLUSTER SLOTS on %s = %s; on %s %s", p.id, got, ps[0].id, slots)
		}
		// The replication offsets are each node's own applied index.
		strip := func(s string) string { return offsets.ReplaceAllString(s, "replication-offset N") }
		if got := clusterReply(t, p, "SHARDS"); strip(got) != strip(shards) {
			t.Errorf("CLUSTER SHARDS on %s = %s; on %s %s", p.id, got, ps[0].id, shards)
		}
		if got := clusterReply(t, p, "MYID"); got != NodeID(p.id) {
			t.Errorf("CLUSTER MYID on %s = %s; want sha1(%s) %s", p.id, got, p.id, NodeID(p.id))
		}
		if got := clusterReply(t, p, "INFO"); !strings.HasPrefix(got, "cluster_state:ok\r\n") {
			t.Errorf("CLUSTER INFO on %s = %q", p.id, got)
		}
	}

	// go-redis's ClusterClient through a follower: exact decisions.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{followers[0].addr()}})
	defer cc.Close()
	admitted := 0
	for i := range 7 {
		v, err := cc.Do(ctx, "RL.TOKEN", "cap5", "1/h", 5).Int64Slice()
		if err != nil {
			t.Fatalf("take %d: %v", i+1, err)
		}
		admitted += int(v[0])
	}
	if admitted != 5 {
		t.Fatalf("a key of capacity 5 taken 7 times admitted %d; want 5", admitted)
	}

	// With ReadOnly, RL.INFO (a read-only command) goes to a replica.
	before := map[string]string{}
	for _, p := range ps {
		before[p.id] = commandCalls(t, p, "rl.info")
	}
	ro := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{ld.addr()}, ReadOnly: true})
	defer ro.Close()
	for i := range 10 {
		v, err := ro.Do(ctx, "RL.INFO", "cap5").Result()
		if err != nil || v == nil {
			t.Fatalf("RL.INFO %d through a ReadOnly ClusterClient = %v, %v", i, v, err)
		}
	}
	if got := commandCalls(t, ld, "rl.info"); got != before[ld.id] {
		t.Errorf("the leader served RL.INFO (calls %s → %s); want the replicas to", before[ld.id], got)
	}
	served := 0
	for _, f := range followers {
		var b, a int
		fmt.Sscan(before[f.id], &b)
		fmt.Sscan(commandCalls(t, f, "rl.info"), &a)
		served += a - b
	}
	if served != 10 {
		t.Errorf("the followers served %d RL.INFO; want 10", served)
	}

	// redis-cli -c through a follower.
	if cli, err := exec.LookPath("redis-cli"); err == nil {
		out, err := exec.Command(cli, "-c", "-p", fmt.Sprint(followers[1].port), "RL.TOKEN", "cap5", "1/h", "5").CombinedOutput()
		if err != nil || strings.Fields(string(out))[0] != "0" {
			t.Errorf("redis-cli -c RL.TOKEN cap5 = %q, %v; want a denial", out, err)
		}
		out, err = exec.Command(cli, "-c", "-p", fmt.Sprint(followers[1].port), "CLUSTER", "KEYSLOT", "123456789").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "12739" {
			t.Errorf("redis-cli -c CLUSTER KEYSLOT 123456789 = %q, %v", out, err)
		}
	}

	// The Node and Python cluster clients of the client matrix, through
	// each member in turn.
	for i, name := range []string{"ioredis5", "ioredis6", "redis4", "redis5", "redis6", "redis-py"} {
		seed := ps[i%3]
		t.Run(name, func(t *testing.T) {
			got := runClusterScript(t, seed.port, name)
			if got != "admitted=5 slots=0-16383:3" {
				t.Fatalf("%s through %s: %s; want admitted=5 slots=0-16383:3", name, seed.id, got)
			}
		})
	}
}

// runClusterScript runs the client matrix's cluster script for client
// (compat/clients/node/cluster.mjs, python/cluster.py for redis-py, or the
// goredis module for go-redis-9.23, the newest go-redis)
// seeded with port, with env (NAME=value) added, and returns its RESULT
// line. Without the runtime it skips, or fails under SLUICE_CLIENT_MATRIX
// as the matrix does.
func runClusterScript(t *testing.T, port int, client string, env ...string) string {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("SLUICE_CLIENT_MATRIX") != "" {
			t.Fatalf("%s is missing, and SLUICE_CLIENT_MATRIX is set", what)
		}
		t.Skipf("%s is missing", what)
	}
	var cmd *exec.Cmd
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	switch client {
	case "go-redis-9.23":
		bin := filepath.Join(t.TempDir(), "goredis")
		if out, err := exec.CommandContext(ctx, "go", "build", "-C", filepath.Join(clientMatrix, "goredis"), "-o", bin, ".").CombinedOutput(); err != nil {
			missing(fmt.Sprintf("a build of compat/clients/goredis (%v: %s)", err, out))
		}
		cmd = exec.CommandContext(ctx, bin)
	case "redis-py":
		if exec.Command("/usr/bin/python3", "-c", "import redis.cluster").Run() != nil {
			missing("python3-redis")
		}
		cmd = exec.CommandContext(ctx, "/usr/bin/python3", "python/cluster.py")
	default:
		node, err := exec.LookPath("node")
		if err != nil {
			missing("node")
		}
		if _, err := os.Stat(filepath.Join(clientMatrix, "node_modules", client)); err != nil {
			missing("compat/clients/node_modules (npm ci)")
		}
		cmd = exec.CommandContext(ctx, node, "node/cluster.mjs", client)
	}
	cmd.Dir = clientMatrix
	cmd.Env = append(append(os.Environ(), fmt.Sprintf("SLUICE_PORT=%d", port)), env...)
	out, err := cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", client, err, out, stderr)
	}
	result := ""
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "RESULT "); ok {
			result = v
		}
		if v, ok := strings.CutPrefix(line, "MOVED "); ok {
			t.Logf("%s received %s MOVED", client, v)
		}
	}
	if result != "" {
		return result
	}
	t.Fatalf("%s printed no RESULT:\n%s", client, out)
	return ""
}

package clients

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The cluster clients against a single node, which answers as one shard
// owning all 16384 slots: each connects, decides exactly, and sees one
// range with one node. (cluster/clusterproto_process_test.go runs the same
// scripts against a 3-process group.)

// runClusterScript runs a cluster script seeded with port and returns its
// RESULT line.
func runClusterScript(t *testing.T, port string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SLUICE_PORT="+port)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out, stderr.String())
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "RESULT "); ok {
			return v
		}
	}
	t.Fatalf("%s %v printed no RESULT\n%s%s", name, args, out, stderr.String())
	return ""
}

const oneShard = "admitted=5 slots=0-16383:1"

func TestClusterClients(t *testing.T) {
	s := startServer(t)
	t.Run("node", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			missing(t, "node")
		}
		if _, err := os.Stat("node_modules"); err != nil {
			missing(t, "compat/clients/node_modules (npm ci)")
		}
		for _, client := range []string{"ioredis5", "ioredis6", "redis4", "redis5", "redis6"} {
			t.Run(client, func(t *testing.T) {
				if got := runClusterScript(t, s.port, node, "node/cluster.mjs", client); got != oneShard {
					t.Fatalf("%s: %s; want %s", client, got, oneShard)
				}
			})
		}
	})
	t.Run("redis-py", func(t *testing.T) {
		py := "/usr/bin/python3"
		if err := exec.Command(py, "-c", "import redis.cluster").Run(); err != nil {
			missing(t, "python3-redis (Debian's, for /usr/bin/python3)")
		}
		if got := runClusterScript(t, s.port, py, "python/cluster.py"); got != oneShard {
			t.Fatalf("redis-py: %s; want %s", got, oneShard)
		}
	})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("go-redis/RESP%d", proto), func(t *testing.T) {
			ctx := context.Background()
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:" + s.port}, Protocol: proto})
			defer cc.Close()
			key := fmt.Sprintf("go-redis:%d:cap5", proto)
			admitted := 0
			for i := range 7 {
				v, err := cc.Do(ctx, "RL.TOKEN", key, "1/h", 5).Int64Slice()
				if err != nil {
					t.Fatalf("take %d: %v", i+1, err)
				}
				admitted += int(v[0])
			}
			if admitted != 5 {
				t.Fatalf("a key of capacity 5 taken 7 times admitted %d; want 5", admitted)
			}
			slots, err := cc.ClusterSlots(ctx).Result()
			if err != nil || len(slots) != 1 || slots[0].Start != 0 || slots[0].End != 16383 || len(slots[0].Nodes) != 1 ||
				slots[0].Nodes[0].Addr != "127.0.0.1:"+s.port {
				t.Fatalf("CLUSTER SLOTS = %+v, %v; want 0-16383 on 127.0.0.1:%s", slots, err, s.port)
			}
		})
	}
	t.Run("redis-cli", func(t *testing.T) {
		cli, err := exec.LookPath("redis-cli")
		if err != nil {
			missing(t, "redis-cli")
		}
		var got []string
		for range 7 {
			out, err := exec.Command(cli, "-c", "-p", s.port, "RL.TOKEN", "redis-cli:cap5", "1/h", "5").CombinedOutput()
			if err != nil {
				t.Fatalf("redis-cli -c: %v\n%s", err, out)
			}
			got = append(got, strings.Fields(string(out))[0])
		}
		if strings.Join(got, "") != "1111100" {
			t.Fatalf("redis-cli -c admitted %v; want five 1s then two 0s", got)
		}
	})
	// The node id is kept in --dir across a restart.
	t.Run("node-id", func(t *testing.T) {
		myid := func() string {
			rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + s.port, MaxRetries: 20})
			defer rdb.Close()
			id, err := rdb.Do(context.Background(), "CLUSTER", "MYID").Text()
			if err != nil || len(id) != 40 {
				t.Fatalf("CLUSTER MYID = %q, %v", id, err)
			}
			return id
		}
		id := myid()
		s.restart()
		if again := myid(); again != id {
			t.Fatalf("CLUSTER MYID = %s after a restart; was %s", again, id)
		}
	})
}

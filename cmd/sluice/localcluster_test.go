package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// deploy/local-cluster.sh, which `make cluster GROUPS=3` runs: 3 data groups
// of 3 processes come up with cluster_state:ok on all 9, each group's leader
// on a process of its own, a cluster client decides through the seed it
// prints, and SIGTERM stops every node. The test runs it with -p auto (the
// kernel's ports) in a temporary directory; the make target's fixed ports
// differ only in the numbers passed. The nodes run --cluster-proxy yes,
// so a plain client on the seed decides on every group's keys.
func TestLocalClusterScriptStartsThreeGroups(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repoRoot, "deploy/local-cluster.sh"),
		"-g", "3", "-b", binPath, "-d", dir, "-p", "auto", "-w", "60", "--", "--cluster-proxy", "yes")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the script and its nodes, if still there
	})

	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, out)
		exited <- cmd.Wait()
		close(lines)
	}()
	var printed []string
	seed := ""
	deadline := time.After(90 * time.Second)
	for seed == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the script exited before the cluster was up: %v\nstdout: %s\nstderr: %s", <-exited, printed, stderr.String())
			}
			printed = append(printed, l)
			if s, ok := strings.CutPrefix(l, "seed: "); ok {
				seed = s
			}
		case <-deadline:
			t.Fatalf("no seed printed after 90 s\nstdout: %s\nstderr: %s", printed, stderr.String())
		}
	}
	if l := <-lines; !strings.Contains(l, "redis-cli -c -p "+seed[strings.LastIndex(seed, ":")+1:]+" RL.TOKEN user:42 10/s 20") {
		t.Errorf("the first command printed: %q", l)
	}

	ctx := context.Background()
	text, err := os.ReadFile(filepath.Join(dir, "nodes"))
	if err != nil {
		t.Fatal(err)
	}
	nodes := strings.Split(strings.TrimSpace(string(text)), "\n")
	if len(nodes) != 9 {
		t.Fatalf("%d nodes listed; want 9: %q", len(nodes), text)
	}
	var addrs []string
	for _, l := range nodes {
		_, addr, _ := strings.Cut(l, " ")
		addrs = append(addrs, addr)
		rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_size:3") {
			t.Errorf("%s: CLUSTER INFO %q, %v", l, info, err)
		}
		if addr == seed {
			// Three shards, each led by a different process.
			shards, err := rdb.ClusterShards(ctx).Result()
			leaders := map[string]bool{}
			for _, sh := range shards {
				for _, n := range sh.Nodes {
					if n.Role == "master" {
						leaders[net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))] = true
					}
				}
			}
			if err != nil || len(shards) != 3 || len(leaders) != 3 {
				t.Errorf("CLUSTER SHARDS at the seed: %d shards, leaders %v, %v", len(shards), leaders, err)
			}
		}
		rdb.Close()
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{seed}})
	defer cc.Close()
	for _, key := range []string{"user:42", "user:43", "user:44", "user:45"} {
		if v, err := cc.Do(ctx, "RL.TOKEN", key, "10/s", 20).Slice(); err != nil || v[0] != int64(1) {
			t.Errorf("RL.TOKEN %s through the seed: %v %v", key, v, err)
		}
	}

	plain := redis.NewClient(&redis.Options{Addr: seed, MaxRetries: -1})
	defer plain.Close()
	for k := 0; k < 30; k++ {
		key := "plain:" + strconv.Itoa(k)
		admitted := 0
		for range 4 {
			v, err := plain.Do(ctx, "RL.TOKEN", key, "1/h", 3).Slice()
			if err != nil {
				t.Fatalf("a plain client's RL.TOKEN %s at the seed: %v", key, err)
			}
			if v[0] == int64(1) {
				admitted++
			}
		}
		if admitted != 3 {
			t.Errorf("%s: %d of 4 admitted at capacity 3", key, admitted)
		}
	}

	// SIGTERM (as Ctrl-C's SIGINT) stops the script and every node.
	syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the script's exit: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the script did not stop within 30 s of SIGTERM")
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the script stopped", a)
		}
	}
}

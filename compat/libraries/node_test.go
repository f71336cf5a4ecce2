package libraries_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeLibrariesAgreeWithRedis runs the Node project in compat/node
// (rate-limiter-flexible 11.4.0, 10.0.1 and 5.0.5 through ioredis and
// node-redis, rate-limit-redis 6.0.1, 5.0.0 and 4.2.0 behind
// express-rate-limit 8 in an express app;
// versions pinned in its package-lock.json) against sluice and a real
// redis-server side by side: `node --test` with SLUICE_ADDR and REDIS_ADDR.
// The project's own assertions require identical results. It skips when
// node is not installed or `npm ci` has not been run in compat/node (.ci/run
// runs it).
func TestNodeLibrariesAgreeWithRedis(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the Node libraries' comparison is not run")
	}
	dir := filepath.Join("..", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "rate-limiter-flexible")); err != nil {
		t.Skip("compat/node has no node_modules: run `npm ci` there (.ci/run does)")
	}
	redisAddr := startRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-concurrency=1", "test/")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLUICE_ADDR="+sluiceAddr, "REDIS_ADDR="+redisAddr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "# SKIP") || strings.HasPrefix(line, "# pass") || strings.HasPrefix(line, "# skipped") {
			t.Log(strings.TrimSpace(line))
		}
	}
	if !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("node --test did not report 0 failures:\n%s", out)
	}
}

package libraries_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPythonLimitsAgreesWithRedis runs Python limits 2.8 (Debian's
// python3-limits, behind Flask-Limiter and slowapi) through redis-py,
// unchanged, against sluice and a redis-server side by side
// (testdata/limits_compare.py): its fixed window, elastic-expiry fixed window
// and moving window strategies (hit, test, get_window_stats, clear, over
// more than one window), storage.reset() and check(); every outcome, key,
// TYPE, value and TTL the same. It skips when /usr/bin/python3 cannot import
// limits, and fails then if SLUICE_CLIENT_MATRIX is set (.ci/run).
func TestPythonLimitsAgreesWithRedis(t *testing.T) {
	runPython(t, "limits", "python3-limits")
}

// TestRedisPyLockAgreesWithRedis runs redis-py's Lock (a connection that
// also does non-limiter work): acquire, a second acquire of a held lock,
// locked, owned, extend (added and replace_ttl), reacquire, release, the
// LockErrors of a released lock, a context manager and a lock that expires
// on its own, against sluice and a redis-server side by side.
func TestRedisPyLockAgreesWithRedis(t *testing.T) {
	runPython(t, "lock", "python3-redis")
}

func runPython(t *testing.T, part, pkg string) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import limits, redis").Run(); err != nil {
		if os.Getenv("SLUICE_CLIENT_MATRIX") != "" {
			t.Fatalf("%s (Debian's, for /usr/bin/python3) is missing, and SLUICE_CLIENT_MATRIX is set: .ci/run installs it", pkg)
		}
		t.Skipf("%s (Debian's, for /usr/bin/python3) is missing: apt-get install -y python3-limits", pkg)
	}
	redisAddr := startRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/limits_compare.py", part)
	cmd.Env = append(os.Environ(), "SLUICE_ADDR="+sluiceAddr, "REDIS_ADDR="+redisAddr)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "RESULT ok") {
		t.Fatalf("limits_compare.py %s: %v\n%s", part, err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}

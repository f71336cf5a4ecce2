package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// protectedScript runs in a network namespace of its own, where 192.0.2.1
// (TEST-NET-1) is a local address that is not loopback: the server binds
// 0.0.0.0 there, and redis-cli reaches it once over loopback and once
// from 192.0.2.1. Nothing outside the namespace can reach either.
const protectedScript = `
ip link set lo up
ip addr add 192.0.2.1/32 dev lo
"$BIN" --bind 0.0.0.0 --port 6390 --save 0 --dir "$DIR" $EXTRA >"$DIR/log" 2>&1 &
pid=$!
for i in $(seq 200); do redis-cli -h 127.0.0.1 -p 6390 PING >/dev/null 2>&1 && break; sleep 0.05; done
echo "loopback: $(redis-cli -h 127.0.0.1 -p 6390 $AUTH PING 2>&1)"
echo "outside: $(redis-cli -h 192.0.2.1 -p 6390 PING 2>&1)"
kill $pid
wait $pid
`

// TestProtectedModeRefusesNonLoopbackClients: with no password, a server
// bound to 0.0.0.0 answers loopback clients and refuses the others with
// the DENIED explanation, unless --protected-mode no or a password is set.
func TestProtectedModeRefusesNonLoopbackClients(t *testing.T) {
	for _, tool := range []string{"unshare", "ip", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: protected mode needs a non-loopback address of a network namespace of the test's own", tool)
		}
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace (%v: %s): protected mode needs a non-loopback address of the test's own", err, out)
	}
	for _, tc := range []struct {
		name, extra, auth, loopback, outside string
	}{
		{"default", "", "", "PONG", "DENIED sluice is running in protected mode because protected mode is enabled and no password is set for the default user."},
		{"protected-mode no", "--protected-mode no", "", "PONG", "PONG"},
		{"requirepass", "--requirepass pw", "-a pw --no-auth-warning", "PONG", "NOAUTH Authentication required."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("unshare", "-n", "sh", "-c", protectedScript)
			cmd.Env = append(os.Environ(), "BIN="+binPath, "DIR="+dir, "EXTRA="+tc.extra, "AUTH="+tc.auth)
			out, err := cmd.CombinedOutput()
			if err != nil {
				log, _ := os.ReadFile(dir + "/log")
				t.Fatalf("%v\n%s\nserver log:\n%s", err, out, log)
			}
			text := string(out)
			if !strings.Contains(text, "loopback: "+tc.loopback) || !strings.Contains(text, "outside: "+tc.outside) {
				log, _ := os.ReadFile(dir + "/log")
				t.Fatalf("got:\n%s\nwant loopback %q and outside %q\nserver log:\n%s", text, tc.loopback, tc.outside, log)
			}
		})
	}
}

package cluster

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestProcessMonitorOnTheLeaderHidesForwardedPasswords: an ACL SETUSER
// sent to a follower reaches the leader inside RAFT.FORWARD; the leader's
// MONITOR shows that command with its submission redacted, as it shows a
// direct ACL SETUSER, and the password appears on no line.
func TestProcessMonitorOnTheLeaderHidesForwardedPasswords(t *testing.T) {
	const secret = "TOPSECRETPW"
	ps := newProcs(t, 3)
	startGroupOf(t, ps, nil)
	ld := leaderOf(ps)
	fo := followerOf(ps)
	if ld == nil || fo == nil {
		t.Fatal("no leader or no follower")
	}

	nc, err := net.DialTimeout("tcp", ld.addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(nc)
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR = %q, %v", line, err)
	}

	admin := asUser(t, fo, "", "")
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "fwd", "on", ">"+secret, "~fwd:*", "+@limiter").Err(); err != nil {
		t.Fatalf("ACL SETUSER on follower %s: %v", fo.id, err)
	}
	// A marker sent to the leader after the change: every line the change
	// caused on the leader comes before it.
	if err := asUser(t, ld, "", "").Do(context.Background(), "ECHO", "monitor-marker").Err(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	forwarded := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading MONITOR after %q: %v", lines, err)
		}
		lines = append(lines, line)
		if strings.Contains(line, secret) {
			t.Errorf("the leader's MONITOR shows the password: %q", line)
		}
		if strings.Contains(line, `"RAFT.FORWARD"`) {
			forwarded = true
			if !strings.HasSuffix(line, `"RAFT.FORWARD" "(redacted)"`+"\r\n") {
				t.Errorf("RAFT.FORWARD line %q; want its submission redacted", line)
			}
		}
		if strings.Contains(line, `"monitor-marker"`) {
			break
		}
	}
	if !forwarded {
		t.Fatalf("no RAFT.FORWARD line on the leader's MONITOR: %q", lines)
	}
}

package commands

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// authedConn dials the server, authenticates as user and returns the
// connection and its reader.
func authedConn(t *testing.T, ts *testServer, user, pass string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+ts.port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, "AUTH "+user+" "+pass+"\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("AUTH %s: %q %v", user, line, err)
	}
	return c, r
}

// closedWithin reports whether the server closes c within d (a read ends
// in EOF or a reset rather than a timeout).
func closedWithin(c net.Conn, r *bufio.Reader, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestACLRemovingAUserClosesItsConnections: ACL DELUSER closes the
// connections authenticated as that user at once, as Redis does (ACL LOAD
// and a group's replicated changes take the same path, acl.Users.OnRetire);
// other users' connections stay open.
func TestACLRemovingAUserClosesItsConnections(t *testing.T) {
	ioModels(t, func(t *testing.T, loops int) {
		ts := startServer(t, testConfig{EventLoops: loops})
		admin := ts.client(t, proto(2))
		for _, u := range []string{"a", "b"} {
			do(t, admin, "ACL", "SETUSER", u, "on", ">p"+u, "~*", "+@all")
		}
		ca, ra := authedConn(t, ts, "a", "pa")
		cb, rb := authedConn(t, ts, "b", "pb")
		if got := do(t, admin, "ACL", "DELUSER", "a"); got != int64(1) {
			t.Fatalf("ACL DELUSER a = %v", got)
		}
		if !closedWithin(ca, ra, 5*time.Second) {
			t.Fatal("the deleted user's connection is still open 5 s after ACL DELUSER")
		}
		if closedWithin(cb, rb, 200*time.Millisecond) {
			t.Fatal("another user's connection was closed")
		}
		io.WriteString(cb, "PING\r\n")
		cb.SetReadDeadline(time.Now().Add(5 * time.Second))
		if line, err := rb.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+PONG") {
			t.Fatalf("PING from the user that stays: %q %v", line, err)
		}
	})
}

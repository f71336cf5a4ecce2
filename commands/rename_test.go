package commands

import (
	"strings"
	"testing"
)

// TestRenameCommandHidesAndRenames: rename-command hides CONFIG ("") and
// answers FLUSHALL only under its new name, over a real socket, and the
// old names are unknown commands, pipelined or not.
func TestRenameCommandHidesAndRenames(t *testing.T) {
	ts := startServer(t, testConfig{Renames: []Rename{{From: "CONFIG", To: ""}, {From: "flushall", To: "flushall-9f2c"}}})
	c := dialRaw(t, ts.addr)
	if got := c.do("CONFIG GET port\r\n"); !strings.HasPrefix(got, "-ERR unknown command 'CONFIG'") {
		t.Errorf("a hidden CONFIG = %q", got)
	}
	c.send("FLUSHALL\r\nFLUSHALL-9F2C\r\nflushall\r\nPING\r\n")
	for i, want := range []string{"-ERR unknown command 'FLUSHALL'", "+OK", "-ERR unknown command 'flushall'", "+PONG"} {
		if got := c.reply(); !strings.HasPrefix(got, want) {
			t.Errorf("reply %d = %q; want %q…", i, got, want)
		}
	}
	// Another server in the same process keeps every name.
	other := dialRaw(t, startServer(t, testConfig{}).addr)
	if got := other.do("FLUSHALL\r\n"); got != "+OK" {
		t.Errorf("FLUSHALL on a server without renames = %q", got)
	}
}

func TestRenameCommandRefusesBadDirectives(t *testing.T) {
	for _, r := range [][]Rename{
		{{From: "nosuch", To: "x"}},
		{{From: "del", To: "ping"}},
		{{From: "del", To: "has space"}},
		{{From: "del", To: ""}, {From: "del", To: "x"}},
	} {
		if _, err := renamedTable(r); err == nil {
			t.Errorf("%v accepted", r)
		}
	}
}

//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServerRunsWithItsTimerSlack: the server re-executes itself in the
// same process to run with --timer-slack-us (1 ms by default), keeps its
// name, serves, and with 0 keeps the slack it inherited.
func TestServerRunsWithItsTimerSlack(t *testing.T) {
	inherited := procNumber(t, "/proc/self/timerslack_ns")
	for _, c := range []struct {
		args []string
		want int64 // ns
	}{
		{nil, 1_000_000},
		{[]string{"--timer-slack-us", "250"}, 250_000},
		{[]string{"--timer-slack-us", "0"}, inherited},
	} {
		p := start(t, append([]string{"--dir", t.TempDir()}, c.args...)...)
		rdb := client(t, p)
		serving(t, rdb, "slack:1", 10)
		pid := p.cmd.Process.Pid // the pid the test started: the image replaced, not a child
		if got := procNumber(t, "/proc/"+strconv.Itoa(pid)+"/timerslack_ns"); got != c.want {
			t.Errorf("%v: timer slack %d ns; want %d", c.args, got, c.want)
		}
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if name := filepath.Base(binPath); err != nil || strings.TrimSpace(string(comm)) != name[:min(len(name), 15)] {
			t.Errorf("%v: process named %q (%v); want the binary's name %q", c.args, comm, err, name)
		}
		want := "1000"
		if c.args != nil {
			want = c.args[1]
		}
		if v, err := rdb.ConfigGet(context.Background(), "timer-slack-us").Result(); err != nil || v["timer-slack-us"] != want {
			t.Errorf("%v: CONFIG GET timer-slack-us = %v, %v; want %s", c.args, v, err, want)
		}
	}
}

// TestServerStartedByALinkKeepsItsName: started through a symbolic link,
// the server executes itself again by the link's path, so that ps and
// pgrep still show the name it was started by.
func TestServerStartedByALinkKeepsItsName(t *testing.T) {
	link := filepath.Join(t.TempDir(), "sluice-by-link")
	if err := os.Symlink(binPath, link); err != nil {
		t.Fatal(err)
	}
	p := startBin(t, link, []string{"--port", "auto", "--bind", "127.0.0.1", "--dir", t.TempDir()})
	serving(t, client(t, p), "link:1", 10)
	pid := strconv.Itoa(p.cmd.Process.Pid)
	if got := procNumber(t, "/proc/"+pid+"/timerslack_ns"); got != 1_000_000 {
		t.Errorf("timer slack %d ns; want 1000000", got)
	}
	if comm, err := os.ReadFile("/proc/" + pid + "/comm"); err != nil || strings.TrimSpace(string(comm)) != "sluice-by-link" {
		t.Errorf("process named %q (%v); want the link's name", comm, err)
	}
}

func procNumber(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

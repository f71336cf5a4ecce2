//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestServerKeepsTheRuntimeMonitorAwakeWhereAsked: with
// --runtime-monitor-awake yes, or auto on a replicated node, the server
// runs with GODEBUG's schedtrace at its largest period, added to the
// GODEBUG it was given, or with a schedtrace given kept; with no, or auto
// on a single node, its GODEBUG is the one it was given. It serves either
// way, with its timer slack.
func TestServerKeepsTheRuntimeMonitorAwakeWhereAsked(t *testing.T) {
	replicated := []string{"--node-id", "n1", "--raft-bind", "127.0.0.1:0", "--bootstrap", "force"}
	for _, c := range []struct {
		name    string
		godebug string // the environment's; "": none
		args    []string
		want    string // GODEBUG in the server's environment; "": none
	}{
		{"single node, auto", "", nil, ""},
		{"single node, yes", "", []string{"--runtime-monitor-awake", "yes"}, "schedtrace=2147483647"},
		{"single node, yes, no slack", "", []string{"--runtime-monitor-awake", "yes", "--timer-slack-us", "0"}, "schedtrace=2147483647"},
		{"replicated, auto", "", replicated, "schedtrace=2147483647"},
		{"replicated, no", "", append([]string{"--runtime-monitor-awake", "no"}, replicated...), ""},
		{"replicated, another GODEBUG", "madvdontneed=1", replicated, "madvdontneed=1,schedtrace=2147483647"},
		{"replicated, a schedtrace given", "schedtrace=0", replicated, "schedtrace=0"},
		{"single node, a GODEBUG kept", "madvdontneed=1", nil, "madvdontneed=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.godebug == "" {
				t.Setenv("GODEBUG", "")
				os.Unsetenv("GODEBUG")
			} else {
				t.Setenv("GODEBUG", c.godebug)
			}
			p := start(t, append([]string{"--dir", t.TempDir()}, c.args...)...)
			rdb := client(t, p)
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				err := rdb.Do(context.Background(), "RL.TOKEN", "awake:1", "1/h", 10).Err()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no decision within 15 s: %v\n%s", err, p.logText())
				}
			}
			environ, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/environ")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range strings.Split(string(environ), "\x00") {
				if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
					got = append(got, v)
				}
			}
			switch {
			case c.want == "" && len(got) != 0, c.want != "" && !slices.Equal(got, []string{c.want}):
				t.Errorf("GODEBUG in the server's environment: %q; want %q", got, c.want)
			}
			if strings.Contains(p.logText(), "SCHED") {
				t.Errorf("the runtime printed a scheduler trace:\n%s", p.logText())
			}
		})
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

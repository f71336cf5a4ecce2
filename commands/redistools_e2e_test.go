package commands

import (
	"regexp"
	"strings"
	"testing"
)

// TestCommandstatsCountSubcommandsAsRedis7: a command with subcommands is
// counted per subcommand under Redis 7's name (cmdstat_client|info,
// cmdstat_config|get), in INFO commandstats, latencystats and
// CommandStats, not under the container's name.
func TestCommandstatsCountSubcommandsAsRedis7(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	do(t, rdb, "CLIENT", "INFO")
	do(t, rdb, "CLIENT", "INFO")
	do(t, rdb, "CONFIG", "GET", "maxclients")
	doErr(t, rdb, "CONFIG", "GET")
	info := do(t, rdb, "INFO", "commandstats", "latencystats").(string)
	for _, re := range []string{
		`(?m)^cmdstat_client\|info:calls=2,`,
		`(?m)^cmdstat_config\|get:calls=2,.*failed_calls=1\r`,
		`(?m)^latency_percentiles_usec_client\|info:p50=`,
	} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Errorf("INFO lacks %s:\n%s", re, info)
		}
	}
	if strings.Contains(info, "cmdstat_client:") || strings.Contains(info, "cmdstat_config:") {
		t.Errorf("INFO counts a container command:\n%s", info)
	}
}

// TestClientListShowsTheRunningCommand: CLIENT LIST's cmd= is, for the
// connection running it, client|list (the command running, as Redis 7
// shows it), and for another connection the last command it ran, with its
// subcommand.
func TestClientListShowsTheRunningCommand(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(2))
	other := s.client(t, proto(2))
	do(t, other, "CLIENT", "SETNAME", "other")
	do(t, rdb, "PING")
	list := do(t, rdb, "CLIENT", "LIST").(string)
	var self, them string
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		if strings.Contains(l, " name=other ") {
			them = l
		} else {
			self = l
		}
	}
	if !strings.Contains(self, " cmd=client|list ") {
		t.Errorf("the caller's line: %q; want cmd=client|list", self)
	}
	if !strings.Contains(them, " cmd=client|setname ") {
		t.Errorf("the other connection's line: %q; want cmd=client|setname", them)
	}
	if info := do(t, rdb, "CLIENT", "INFO").(string); !strings.Contains(info, " cmd=client|info ") {
		t.Errorf("CLIENT INFO: %q; want cmd=client|info", info)
	}
}

// TestClientMaintNotificationsAnswersAsRedis7: go-redis v9.23 sends
// CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type <type> after HELLO 3
// and, in its default mode (auto), turns the feature off on an error reply
// and goes on; sluice has no maintenance events to push and answers Redis
// 7's unknown-subcommand error, word for word.
func TestClientMaintNotificationsAnswersAsRedis7(t *testing.T) {
	s := startServer(t, testConfig{})
	rdb := s.client(t, proto(3))
	got := doErr(t, rdb, "CLIENT", "MAINT_NOTIFICATIONS", "on", "moving-endpoint-type", "auto")
	if want := "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP."; got != want {
		t.Errorf("CLIENT MAINT_NOTIFICATIONS ON: %q; want Redis 7's %q", got, want)
	}
	if v := do(t, rdb, "PING"); v != "PONG" {
		t.Errorf("PING after it = %v", v)
	}
}

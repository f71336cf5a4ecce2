package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/cluster"
	"github.com/sluice-rl/sluice/commands"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/rls"
	"github.com/sluice-rl/sluice/server"
)

func TestDefaults(t *testing.T) {
	c, err := parseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.port != 6380 || len(c.bind) != 1 || c.bind[0] != "127.0.0.1" || c.commands.Debug != commands.DebugNo || c.shards < 4 {
		t.Fatalf("defaults = %+v", c)
	}
}

// TestDefaultsComeFromThePackages: the flag table's defaults are the
// packages' DefaultConfig, so --help and CONFIG GET print what the packages
// run with, and no default is written twice.
func TestDefaultsComeFromThePackages(t *testing.T) {
	c := defaultConfig()
	srv, cmds, cl := server.DefaultConfig(), commands.DefaultConfig(), cluster.DefaultConfig()
	for name, want := range map[string]string{
		"maxclients":                  strconv.Itoa(srv.MaxClients),
		"timeout":                     strconv.Itoa(int(srv.IdleTimeout.Seconds())),
		"event-loops":                 strconv.Itoa(srv.EventLoops),
		"proto-max-bulk-len":          strconv.FormatInt(srv.Limits.MaxBulk, 10),
		"proto-max-multibulk-len":     strconv.FormatInt(srv.Limits.MaxArgs, 10),
		"client-query-buffer-limit":   strconv.Itoa(srv.QueryBufferLimit),
		"maxmemory-clients":           strconv.FormatInt(srv.MaxMemoryClients, 10),
		"enable-debug-command":        string(cmds.Debug),
		"log-max-limit":               strconv.FormatInt(cmds.LogMaxLimit, 10),
		"requirepass":                 cmds.Password,
		"raft-fsync":                  "yes",
		"bootstrap":                   "no",
		"grpc-batch":                  "descriptor",
		"grpc-unknown-domain":         "ok",
		"grpc-headers":                "no",
		"grpc-count-over-limit":       "no",
		"grpc-max-connections":        strconv.Itoa(rls.DefaultMaxConnections),
		"grpc-max-concurrent-streams": strconv.Itoa(rls.DefaultMaxConcurrentStreams),
		"grpc-max-message-size":       strconv.Itoa(rls.DefaultMaxMessageSize),
		"grpc-connection-timeout":     strconv.Itoa(int(rls.DefaultConnectionTimeout.Seconds())),
		"grpc-keepalive-time":         strconv.Itoa(int(rls.DefaultKeepaliveTime.Seconds())),
		"grpc-keepalive-timeout":      strconv.Itoa(int(rls.DefaultKeepaliveTimeout.Seconds())),
		"grpc-max-connection-idle":    "0",
		"rules-max-bytes":             strconv.Itoa(policy.DefaultMaxBytes),
	} {
		if got := findOption(name).get(&c); got != want {
			t.Errorf("default %s = %q; want %q, the package's", name, got, want)
		}
	}
	if !cl.Fsync || cl.Bootstrap != cluster.NoBootstrap {
		t.Errorf("cluster.DefaultConfig() = %+v", cl)
	}
	if err := c.server.Validate(); err != nil {
		t.Error(err)
	}
	if err := c.commands.Validate(); err != nil {
		t.Error(err)
	}
	if c.rls != rls.DefaultConfig() {
		t.Errorf("rls config %+v; want rls.DefaultConfig() %+v", c.rls, rls.DefaultConfig())
	}
	if err := c.rls.Validate(); err != nil {
		t.Error(err)
	}
}

// TestBooleansAreBooleans: raft-fsync is read into a bool, and printed
// back as redis.conf writes it.
func TestBooleansAreBooleans(t *testing.T) {
	for v, want := range map[string]bool{"yes": true, "no": false, "YES": true, "No": false} {
		c, err := parseArgs([]string{"--raft-fsync", v})
		if err != nil || c.cluster.Fsync != want {
			t.Errorf("--raft-fsync %s: %v, %v; want %v", v, c.cluster.Fsync, err, want)
		}
		if got := findOption("raft-fsync").get(&c); got != yesNo(want) {
			t.Errorf("--raft-fsync %s prints as %q", v, got)
		}
	}
	if _, err := parseArgs([]string{"--raft-fsync", "1"}); err == nil {
		t.Error("--raft-fsync 1 was accepted")
	}
}

func TestFlagsOverrideTheConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sluice.conf")
	text := "# a comment\nport 7000\nbind 127.0.0.1 ::1\nrequirepass \"s3 cret\"\ntimeout 30\n\nmaxclients 50\nproto-max-bulk-len 64kb\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := parseArgs([]string{file, "--port", "7001", "--enable-debug-command", "YES"})
	if err != nil {
		t.Fatal(err)
	}
	if c.port != 7001 || c.commands.Password != "s3 cret" || c.server.IdleTimeout != 30*time.Second || c.server.MaxClients != 50 ||
		c.server.Limits.MaxBulk != 64<<10 || c.commands.Debug != commands.DebugYes || strings.Join(c.bind, ",") != "127.0.0.1,::1" {
		t.Fatalf("config = %+v", c)
	}
}

func TestBadArguments(t *testing.T) {
	for _, argv := range [][]string{
		{"--port", "70000"},
		{"--port"},
		{"--port", "1", "2"},
		{"--nope", "1"},
		{"--enable-debug-command", "maybe"},
		{"--proto-max-bulk-len", "12xb"},
		{"--maxclients", "-1"},
		{"--", "x"},
		{"/does/not/exist.conf"},
	} {
		if _, err := parseArgs(argv); err == nil {
			t.Errorf("parseArgs(%q) accepted it", argv)
		}
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "1k": 1000, "1kb": 1024, "1KB": 1024, "64mb": 64 << 20, "2g": 2e9, "1gb": 1 << 30} {
		if got, err := parseMemory(in); err != nil || got != want {
			t.Errorf("parseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5mb", "mb", "9999999999gb", "1 mb"} {
		if _, err := parseMemory(in); err == nil {
			t.Errorf("parseMemory(%q) accepted it", in)
		}
	}
}

// FuzzParseConfigText: a config file is a parser's input; it must never
// panic, and every directive it yields has at least one word.
func FuzzParseConfigText(f *testing.F) {
	f.Add("port 6380\nbind 127.0.0.1\n")
	f.Add("requirepass \"a b\" 'c'\r\n# x\n")
	f.Add("x \"unbalanced\n")
	f.Add("a \"b\"c\n")
	f.Fuzz(func(t *testing.T, text string) {
		ds, err := parseConfigText(text)
		if err != nil {
			return
		}
		for _, d := range ds {
			if len(d.args) == 0 || d.line < 1 {
				t.Fatalf("directive %+v", d)
			}
			c := defaultConfig()
			_ = apply(&c, d.args[0], d.args[1:]) // unknown names and bad values are errors, never panics
		}
	})
}

func TestMaxmemoryClients(t *testing.T) {
	for _, tc := range []struct {
		argv      []string
		want      int64 // the cap in bytes, 0: none (server.Config.MaxMemoryClients)
		configGet string
	}{
		{nil, 256 << 20, "268435456"},
		{[]string{"--maxmemory-clients", "64mb"}, 64 << 20, "67108864"},
		{[]string{"--maxmemory-clients", "0"}, 0, "0"},
		{[]string{"--maxmemory", "1gb", "--maxmemory-clients", "10%"}, (1 << 30) * 10 / 100, "10%"},
		{[]string{"--maxmemory-clients", "100%", "--maxmemory", "64mb"}, 64 << 20, "100%"},
	} {
		c, err := parseArgs(tc.argv)
		if err != nil {
			t.Fatalf("parseArgs(%q): %v", tc.argv, err)
		}
		got, err := c.clientMemoryCap()
		if err != nil || got != tc.want {
			t.Errorf("%q: cap %d, %v; want %d", tc.argv, got, err, tc.want)
		}
		if v := findOption("maxmemory-clients").get(&c); v != tc.configGet {
			t.Errorf("%q: CONFIG GET maxmemory-clients = %q; want %q", tc.argv, v, tc.configGet)
		}
	}
	for _, v := range []string{"0%", "101%", "-5%", "%", "+5%", "5.5%", "12xb", "-1", "10 %"} {
		if _, err := parseArgs([]string{"--maxmemory-clients", v}); err == nil {
			t.Errorf("--maxmemory-clients %q accepted", v)
		}
	}
	c, err := parseArgs([]string{"--maxmemory-clients", "10%"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.clientMemoryCap(); err == nil || !strings.Contains(err.Error(), "--maxmemory") {
		t.Errorf("a percentage without --maxmemory: %v; want an error that names --maxmemory", err)
	}
}

// FuzzParseClientMemory: maxmemory-clients never panics, and what it
// accepts prints back (CONFIG GET) to the same value.
func FuzzParseClientMemory(f *testing.F) {
	for _, s := range []string{"0", "256mb", "10%", "100%", "0%", "+5%", "%", "1gb", "99999999999999%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		bytes, pct, err := parseClientMemory(v)
		if err != nil {
			return
		}
		if pct < 0 || pct > 100 || bytes < 0 || (pct > 0 && bytes != 0) {
			t.Fatalf("parseClientMemory(%q) = %d bytes, %d%%", v, bytes, pct)
		}
		c := Options{maxmemClients: bytes, maxmemClientsPct: pct}
		printed := findOption("maxmemory-clients").get(&c)
		b2, p2, err := parseClientMemory(printed)
		if err != nil || b2 != bytes || p2 != pct {
			t.Fatalf("%q printed as %q, which reads back as %d bytes, %d%%, %v", v, printed, b2, p2, err)
		}
	})
}

func TestReplicationFlags(t *testing.T) {
	c, err := parseArgs([]string{"--bootstrap", "force", "--peers", "10.0.0.2:6380", "10.0.0.3:6380",
		"--raft-allow", "10.0.0.0/16", "192.168.1.7"})
	if err != nil {
		t.Fatal(err)
	}
	if c.cluster.Bootstrap != cluster.BootstrapForce || strings.Join(c.cluster.Peers, ",") != "10.0.0.2:6380,10.0.0.3:6380" ||
		strings.Join(c.cluster.RaftAllow, ",") != "10.0.0.0/16,192.168.1.7" {
		t.Fatalf("config = %+v", c)
	}
	for v, want := range map[string]cluster.BootstrapMode{"yes": cluster.BootstrapIfNew, "no": cluster.NoBootstrap, "FORCE": cluster.BootstrapForce} {
		c, err := parseArgs([]string{"--bootstrap", v})
		if err != nil || c.cluster.Bootstrap != want {
			t.Errorf("--bootstrap %s: %v, %v; want %v", v, c.cluster.Bootstrap, err, want)
		}
	}
	if _, err := parseArgs([]string{"--bootstrap", "maybe"}); err == nil {
		t.Error("--bootstrap maybe was accepted")
	}
	if c, err := parseArgs(nil); err != nil || len(c.cluster.Peers) != 0 || len(c.cluster.RaftAllow) != 0 ||
		c.cluster.Bootstrap != cluster.NoBootstrap {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
}

func TestTLSFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sluice.conf")
	text := "tls-cert-file /etc/tls/tls.crt\ntls-protocols \"TLSv1.2 TLSv1.3\"\ntls-ciphers DEFAULT:!MEDIUM\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := parseArgs([]string{file, "--tls-key-file", "/etc/tls/tls.key", "--tls-ca-cert-file", "/etc/tls/ca.crt",
		"--tls-replication", "yes", "--tls-ciphersuites", "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"})
	if err != nil {
		t.Fatal(err)
	}
	if c.tlsCertFile != "/etc/tls/tls.crt" || c.tlsKeyFile != "/etc/tls/tls.key" || c.tlsCAFile != "/etc/tls/ca.crt" ||
		c.tlsReplication != "yes" || c.tlsProtocols != "TLSv1.2 TLSv1.3" || c.tlsCiphers != "DEFAULT:!MEDIUM" {
		t.Fatalf("config = %+v", c)
	}
	if c, err := parseArgs([]string{"--tls-protocols", "TLSv1.3"}); err != nil || c.tlsProtocols != "TLSv1.3" {
		t.Fatalf("--tls-protocols TLSv1.3: %+v, %v", c, err)
	}
	for _, argv := range [][]string{
		{"--tls-protocols", "TLSv1", "TLSv1.3"},
		{"--tls-protocols"},
		{"--tls-protocols", "SSLv3"},
		{"--tls-ciphers", "RC4-SHA"},
		{"--tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"},
		{"--tls-replication", "maybe"},
	} {
		if _, err := parseArgs(argv); err == nil {
			t.Errorf("parseArgs(%q) accepted it", argv)
		}
	}
}

// TestSecuritySettings: rename-command repeats and takes "" to hide a
// command, in a config file and on the command line; protected-mode,
// aclfile, tls-port and tls-auth-clients reach their configurations.
func TestSecuritySettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sluice.conf")
	text := "rename-command CONFIG \"\"\nrename-command FLUSHALL flushall-9f2c\nprotected-mode no\naclfile /etc/sluice/users.acl\ntls-port 6390\ntls-auth-clients optional\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := parseArgs([]string{file, "--rename-command", "DEBUG", ""})
	if err != nil {
		t.Fatal(err)
	}
	want := []commands.Rename{{From: "CONFIG", To: ""}, {From: "FLUSHALL", To: "flushall-9f2c"}, {From: "DEBUG", To: ""}}
	if fmt.Sprint(c.commands.Renames) != fmt.Sprint(want) || c.commands.ProtectedMode || c.commands.ACLFile != "/etc/sluice/users.acl" ||
		c.tlsPort != 6390 || c.tlsAuthClients != "optional" {
		t.Fatalf("config = %+v", c)
	}
	if d := defaultConfig(); !d.commands.ProtectedMode || d.tlsAuthClients != "yes" || d.tlsPort != 0 {
		t.Fatalf("defaults: protected-mode %v, tls-auth-clients %q, tls-port %d", d.commands.ProtectedMode, d.tlsAuthClients, d.tlsPort)
	}
	for _, bad := range [][]string{{"--rename-command", "CONFIG"}, {"--tls-auth-clients", "maybe"}, {"--protected-mode", "perhaps"}} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

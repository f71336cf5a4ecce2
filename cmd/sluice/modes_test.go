package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The modes of the binary that exit at once: --version, --check-config,
// --print-config and --healthcheck, and the version it reports.

// run runs the binary bin with args and returns its output and exit code.
func run(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// versionsAgree checks that `bin --version`, HELLO's version and INFO
// server's sluice_version all say want.
func versionsAgree(t *testing.T, bin, want string) {
	t.Helper()
	if out, code := run(t, bin, "--version"); code != 0 || out != "sluice v="+want+"\n" {
		t.Fatalf("%s --version = %q (exit %d); want sluice v=%s", bin, out, code, want)
	}
	saved := binPath
	binPath = bin
	p := start(t, "--dir", t.TempDir(), "--save", "0")
	binPath = saved
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 3, DisableIndentity: true})
	defer rdb.Close()
	hello, err := rdb.Do(context.Background(), "HELLO", "3").Result()
	if err != nil {
		t.Fatal(err)
	}
	if v := hello.(map[any]any)["version"]; v != want {
		t.Errorf("HELLO version = %v; want %s", v, want)
	}
	if v := infoField(t, rdb, "server", "sluice_version"); v != want {
		t.Errorf("INFO server sluice_version = %s; want %s", v, want)
	}
	if !strings.Contains(p.logText(), "version="+want+" ") {
		t.Errorf("the ready line does not say version=%s:\n%s", want, p.logText())
	}
}

// TestVersionIsOneValue: a binary linked with -X commands.Version reports
// that version in --version, HELLO and INFO; one built without reports one
// version in all three too (the go command's stamp, or the base version).
func TestVersionIsOneValue(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sluice")
	if out, err := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X github.com/sluice-rl/sluice/commands.Version=9.8.7-test", ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	versionsAgree(t, bin, "9.8.7-test")
	out, _ := run(t, binPath, "--version")
	versionsAgree(t, binPath, strings.TrimSpace(strings.TrimPrefix(out, "sluice v=")))
}

// TestCheckConfigValidatesWithoutStarting: --check-config, anywhere among
// the options, exits 0 for a valid configuration (host names that do not
// resolve here included) and 2 with the reason for one that Open refuses
// or that does not parse; it binds nothing and leaves --dir alone.
func TestCheckConfigValidatesWithoutStarting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--check-config", "--node-id", "sluice-1", "--raft-bind", "0.0.0.0:7000",
			"--raft-advertise", "sluice-1.sluice.nowhere.invalid:7000", "--join", "sluice-0.sluice.nowhere.invalid:6380", "--dir", dir},
			0, "the configuration is valid"},
		{[]string{"--node-id", "n1", "--check-config", "--dir", dir}, 2, "replication needs both --node-id and --raft-bind"},
		{[]string{"--port", "70000", "--check-config"}, 2, "--port:"},
		{[]string{"--no-such-option", "1", "--check-config"}, 2, `unknown option "no-such-option"`},
	} {
		out, code := run(t, binPath, c.args...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("sluice %v: exit %d, %q; want exit %d, %q", c.args, code, out, c.code, c.want)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--check-config made --dir %s: %v", dir, err)
	}
}

// TestPrintConfigWritesTheResolvedOptions: --print-config after a config
// file and flags writes the values they give, as a file that starts the
// server with them.
func TestPrintConfigWritesTheResolvedOptions(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "in.conf")
	os.WriteFile(conf, []byte("maxclients 77\nrename-command FLUSHALL MYFLUSHALL\n"), 0o644)
	out, code := run(t, binPath, conf, "--timeout", "9", "--print-config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, line := range []string{"\nmaxclients 77\n", "\ntimeout 9\n", "\nrename-command FLUSHALL MYFLUSHALL\n"} {
		if !strings.Contains(out, line) {
			t.Errorf("--print-config has no %q", strings.TrimSpace(line))
		}
	}
	printed := filepath.Join(t.TempDir(), "out.conf")
	os.WriteFile(printed, []byte(out), 0o644)
	p := startArgv(t, []string{printed, "--port", "auto", "--dir", t.TempDir()})
	rdb := client(t, p)
	if got := configGet(t, rdb, "maxclients"); got != "77" {
		t.Errorf("CONFIG GET maxclients = %s; want 77", got)
	}
	if err := rdb.Do(context.Background(), "MYFLUSHALL").Err(); err != nil {
		t.Errorf("MYFLUSHALL: %v", err)
	}
}

// TestHealthcheckMode: `sluice --healthcheck` exits 0 against a serving
// sluice (PING), one that asks for a password (NOAUTH) and its /readyz,
// and 1 against a server answering LOADING, a /readyz answering 503 and a
// port where nothing listens.
func TestHealthcheckMode(t *testing.T) {
	dir := t.TempDir()
	ports := filepath.Join(dir, "ports")
	p := start(t, "--dir", dir, "--save", "0", "--metrics-bind", "127.0.0.1:0", "--ports-file", ports)
	addrs := p.ports(t, ports)
	locked := start(t, "--dir", t.TempDir(), "--save", "0", "--requirepass", "secret")

	loading, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer loading.Close()
	go func() {
		for {
			c, err := loading.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			c.Write([]byte("-LOADING sluice is loading the dataset in memory\r\n"))
			c.Close()
		}
	}()
	notReady, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(notReady, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer notReady.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := closed.Addr().String()
	closed.Close()

	for _, c := range []struct {
		addr string
		code int
	}{
		{p.addr, 0},
		{locked.addr, 0},
		{"http://" + addrs["metrics"] + "/readyz", 0},
		{"http://" + addrs["metrics"] + "/healthz", 0},
		{loading.Addr().String(), 1},
		{"http://" + notReady.Addr().String() + "/readyz", 1},
		{nobody, 1},
	} {
		if out, code := run(t, binPath, "--healthcheck", c.addr); code != c.code {
			t.Errorf("sluice --healthcheck %s: exit %d (%s); want %d", c.addr, code, out, c.code)
		}
	}
}

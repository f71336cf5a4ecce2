package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// deploy/systemd/sluice.service: systemd-analyze verify accepts it without
// a word, its ExecStart starts the server with deploy/sluice.conf, its
// ExecReload's SIGHUP reloads without stopping, and its KillSignal stops
// the server after a final save.

// unitSettings returns the unit's Key=value settings, in order.
func unitSettings(text string) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// verifyUnit runs systemd-analyze verify on text, written as sluice.service
// in a directory of its own, and returns what it said.
func verifyUnit(t *testing.T, text string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", "--man=no", path).CombinedOutput()
	return string(out), err
}

func TestSystemdUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (Debian's systemd package; make deps installs it)")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy/systemd/sluice.service"))
	if err != nil {
		t.Fatal(err)
	}
	const installed = "/usr/local/bin/sluice"
	// verify checks that ExecStart's program exists: the test's binary
	// stands in for the installed one, the only change.
	unit := strings.ReplaceAll(string(raw), installed, binPath)
	if out, err := verifyUnit(t, unit); err != nil || out != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// verify warns but exits 0 on a setting it cannot read: the test
	// counts on its silence, which a misspelt setting breaks.
	if out, _ := verifyUnit(t, strings.Replace(unit, "ProtectSystem=strict", "ProtectSystem=strictly", 1)); !strings.Contains(out, "strictly") {
		t.Fatalf("systemd-analyze verify said nothing of ProtectSystem=strictly: %q", out)
	}

	set := map[string]string{}
	var execStart string
	for _, kv := range unitSettings(string(raw)) {
		set[kv[0]] = kv[1]
		if kv[0] == "ExecStart" {
			execStart = kv[1]
		}
	}
	for k, v := range map[string]string{"DynamicUser": "yes", "StateDirectory": "sluice", "ProtectSystem": "strict",
		"NoNewPrivileges": "yes", "PrivateTmp": "yes", "ProtectHome": "yes", "KillSignal": "SIGTERM",
		"ExecReload": "/bin/kill -HUP $MAINPID", "RestartPreventExitStatus": "2"} {
		if set[k] != v {
			t.Errorf("%s=%q; want %q", k, set[k], v)
		}
	}
	if set["LimitNOFILE"] == "" || set["TimeoutStopSec"] == "" {
		t.Errorf("LimitNOFILE=%q TimeoutStopSec=%q: want both set", set["LimitNOFILE"], set["TimeoutStopSec"])
	}

	// ExecStart as systemd runs it, with the repository's config file for
	// /etc/sluice's copy, the state directory a temporary one and the port
	// the kernel's choice.
	argv := strings.Fields(execStart)
	if argv[0] != installed || argv[1] != "/etc/sluice/sluice.conf" {
		t.Fatalf("ExecStart=%s: want %s /etc/sluice/sluice.conf …", execStart, installed)
	}
	argv[1] = filepath.Join(repoRoot, "deploy/sluice.conf")
	dir := t.TempDir()
	for i := range argv {
		if argv[i] == "/var/lib/sluice" { // StateDirectory=sluice
			argv[i] = dir
		}
	}
	p := startArgv(t, append(argv[1:], "--port", "auto"))
	rdb := client(t, p)
	serving(t, rdb, "unit:1", 10)
	serving(t, rdb, "unit:1", 10)
	if _, err := rdb.Do(t.Context(), "RL.TOKEN", "unit:1", "1/h", 10, 3).Result(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP) // ExecReload
	p.waitLog(t, `SIGHUP: no TLS certificate to reload`)
	p.up(t, "after SIGHUP")
	serving(t, rdb, "unit:1", 7)
	p.cmd.Process.Signal(syscall.SIGTERM) // KillSignal
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM; want 0\n%s", code, p.logText())
	}
	p.waitLog(t, `msg="snapshot saved"`)
	if _, err := os.Stat(filepath.Join(dir, "sluice.snap")); err != nil {
		t.Fatalf("no final snapshot in the state directory: %v", err)
	}
}

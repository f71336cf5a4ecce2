package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Smoke tests of the generator against the real sluice binary, built from
// this tree, and against a real redis-server when one is installed. They
// check that runs report throughput, zero errors on a correct server, and
// errors when the replies are errors. Performance targets are checked by
// the benchmark run, never here.

var (
	buildOnce sync.Once
	sluiceBin string
	buildErr  error
	buildDir  string
)

// sluiceTarget builds ./cmd/sluice once per test binary.
func sluiceTarget(t *testing.T) *target {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "bench-test-")
		if buildErr != nil {
			return
		}
		wd, _ := os.Getwd()
		root, err := moduleRoot(wd)
		if err != nil {
			buildErr = err
			return
		}
		sluiceBin, buildErr = buildSluice(context.Background(), root, buildDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return &target{kind: "sluice", bin: sluiceBin, dir: t.TempDir()}
}

func TestMain(m *testing.M) {
	if role := os.Getenv(floorEnv); role != "" { // a process of the floor (floor_test.go), started by the test
		os.Exit(floorChild(role, os.Args[1:], os.Stderr))
	}
	code := m.Run()
	stopAll()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func smokeSpec(name string, d time.Duration) runSpec {
	return runSpec{group: groupOwn, sc: findScenario(name), conns: 4, depth: 8, keys: 1000, duration: d,
		warmup: 100 * time.Millisecond, w: testWorkload}
}

func TestSmokeSluice(t *testing.T) {
	targets := map[string]*target{"sluice": sluiceTarget(t)}
	for _, name := range []string{"sluice-ping", "sluice-token", "sluice-token-derived"} {
		res, err := execute(context.Background(), smokeSpec(name, time.Second), targets)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.skipped != "" {
			t.Fatalf("%s skipped: %s", name, res.skipped)
		}
		if res.t.errors != 0 {
			t.Fatalf("%s: %d errors: %v", name, res.t.errors, res.t.sortedProblems())
		}
		if res.opsPerSec() <= 0 || res.t.hist.TotalCount() != res.t.ok {
			t.Fatalf("%s: %.0f ops/s, %d latencies for %d replies; want both positive and equal",
				name, res.opsPerSec(), res.t.hist.TotalCount(), res.t.ok)
		}
		if !res.cpuKnown || !res.rssKnown {
			t.Fatalf("%s: CPU known %v, RSS known %v; want both read from /proc of the started server", name, res.cpuKnown, res.rssKnown)
		}
		if name == "sluice-token" {
			if res.t.allowed+res.t.denied != res.t.ok || res.t.allowed == 0 {
				t.Fatalf("allowed %d + denied %d != ok %d, or none allowed", res.t.allowed, res.t.denied, res.t.ok)
			}
			if res.touched == 0 || res.touched > 1000 {
				t.Fatalf("touched %d keys; want 1..1000", res.touched)
			}
		}
		t.Logf("%s: %s", name, res.summary())
	}
}

func TestSmokeSluiceErrorReplies(t *testing.T) {
	targets := map[string]*target{"sluice": sluiceTarget(t)}
	bad := *findScenario("sluice-token")
	bad.args = func(w workload, _ string) []string {
		return []string{"RL.TOKEN", "$KEY", "fast", "100", "1"} // not a rate: every reply is an error
	}
	res, err := execute(context.Background(), smokeSpec("sluice-token", 300*time.Millisecond), map[string]*target{})
	if err != nil || res.skipped == "" {
		t.Fatalf("without a sluice target: err %v, skipped %q; want the run skipped", err, res.skipped)
	}
	spec := smokeSpec("sluice-token", 300*time.Millisecond)
	spec.sc = &bad
	res, err = execute(context.Background(), spec, targets)
	if err != nil {
		t.Fatal(err)
	}
	assertReported(t, res, "error reply: -ERR invalid rate 'fast'")
	if res.t.ok != 0 {
		t.Fatalf("ok = %d; want no error reply counted as a success", res.t.ok)
	}

	missing := *findScenario("sluice-token")
	missing.args = func(workload, string) []string { return []string{"RL.NOSUCH", "$KEY"} }
	spec.sc = &missing
	res, err = execute(context.Background(), spec, targets)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.skipped, "ERR unknown command 'RL.NOSUCH'") {
		t.Fatalf("skipped = %q; want the run skipped with the server's unknown command error", res.skipped)
	}
}

// TestSmokeCommandLine runs the tool as a user does, on a running sluice,
// and checks the report it writes: the generated section replaced, other
// sections kept, the chart a well-formed SVG.
func TestSmokeCommandLine(t *testing.T) {
	srv, err := sluiceTarget(t).open(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	dir := t.TempDir()
	md := filepath.Join(dir, "RESULTS.md")
	other := "## Keyspace at scale\n\nwritten by someone else\n"
	os.WriteFile(md, []byte("# Benchmark results\n\n"+sectionBegin+"\nold\n"+sectionEnd+"\n\n"+other), 0o644)
	var stdout, stderr bytes.Buffer
	code := run([]string{"-sluice", srv.addr, "-redis", "off", "-scenarios", "sluice-ping,sluice-token", "-P", "1,4",
		"-c", "2", "-d", "250ms", "-warmup", "0s", "-md", md}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	doc, _ := os.ReadFile(md)
	for _, want := range []string{other, "sluice RL.TOKEN ÷ sluice PING", "| sluice PING | 4 | 2 |", "results/depth.svg"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(string(doc), "\nold\n") || strings.Count(string(doc), sectionBegin) != 1 {
		t.Errorf("the old generated section was not replaced exactly once:\n%s", doc)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "results", chartFile))
	if err != nil {
		t.Fatal(err)
	}
	assertXML(t, svg)
	if !strings.Contains(stdout.String(), "Ratios (same run)") {
		t.Errorf("stdout lacks the ratio table:\n%s", stdout.String())
	}
}

// TestSmokePrebuiltBinary: -sluice-bin starts the binary given instead of
// building the tree's, and the report says so; -sluice-bin with -sluice,
// or a binary that is not there, is refused.
func TestSmokePrebuiltBinary(t *testing.T) {
	bin := sluiceTarget(t).bin
	var stdout, stderr bytes.Buffer
	code := run([]string{"-sluice-bin", bin, "-redis", "off", "-scenarios", "sluice-token", "-P", "1",
		"-c", "2", "-d", "200ms", "-warmup", "0s"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "bench: starting "+bin) || strings.Contains(stderr.String(), "building") {
		t.Errorf("stderr does not say it starts the binary given:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "(-sluice-bin), not built from this tree") {
		t.Errorf("the report does not name the binary:\n%s", stdout.String())
	}
	for _, argv := range [][]string{
		{"-sluice-bin", bin, "-sluice", "127.0.0.1:1"},
		{"-sluice-bin", filepath.Join(t.TempDir(), "none"), "-redis", "off", "-scenarios", "sluice-ping", "-d", "100ms"},
	} {
		stderr.Reset()
		if code := run(argv, io.Discard, &stderr); code == 0 {
			t.Errorf("%v: exit 0; want a refusal", argv)
		}
	}
}

func assertXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, b)
		}
	}
}

// redisTarget starts nothing itself: it says how to start redis-server, or
// skips the test when it is not installed.
func redisTarget(t *testing.T) *target {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH (apt-get install redis-server): the Redis side is not tested")
	}
	return &target{kind: "redis", bin: bin, dir: t.TempDir()}
}

func TestSmokeRedis(t *testing.T) {
	targets := map[string]*target{"redis": redisTarget(t)}
	for _, name := range []string{"redis-incr", "redis-lua-token", "redis-lua-fixed"} {
		res, err := execute(context.Background(), smokeSpec(name, 300*time.Millisecond), targets)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.skipped != "" || res.t.errors != 0 || res.t.ok == 0 {
			t.Fatalf("%s: skipped %q, errors %d %v, ok %d", name, res.skipped, res.t.errors, res.t.sortedProblems(), res.t.ok)
		}
		if want := int64(2 * 1000); name == "redis-lua-token" && (res.dbsize <= 0 || res.dbsize > want) {
			t.Fatalf("dbsize %d; want two keys per bucket, at most %d", res.dbsize, want)
		}
		t.Logf("%s: %s", name, res.summary())
	}
}

// TestSmokeRedisNoscript flushes Redis's script cache during a run: the
// generator must load the script again and count no errors.
func TestSmokeRedisNoscript(t *testing.T) {
	tg := redisTarget(t)
	srv, err := tg.open(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 3; i++ {
			time.Sleep(150 * time.Millisecond)
			srv.call(time.Second, "SCRIPT", "FLUSH")
		}
	}()
	spec := smokeSpec("redis-lua-token", 700*time.Millisecond)
	res, err := execute(context.Background(), spec, map[string]*target{"redis": {kind: "redis", addr: srv.addr}})
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if res.t.errors != 0 || res.t.nosc == 0 || res.t.ok == 0 {
		t.Fatalf("errors %d %v, NOSCRIPT %d, ok %d; want NOSCRIPT seen and handled", res.t.errors,
			res.t.sortedProblems(), res.t.nosc, res.t.ok)
	}
}

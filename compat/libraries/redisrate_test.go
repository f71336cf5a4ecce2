package libraries_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	// The module the scratch module builds from the module cache: required
	// here so that go.mod keeps it and `go mod download` fetches it.
	_ "github.com/go-redis/redis_rate/v10"
)

// go-redis/redis_rate's own tests, unchanged: testdata holds v10.0.1's
// rate_test.go byte for byte (BSD-2-Clause, testdata/redis_rate.LICENSE).
// It dials ":6379"; the harness writes it into a scratch module with that
// address replaced, once for sluice and once for a real redis-server 7,
// runs `go test` there from the module cache (no network), and requires
// that every test ends the same way on both, with the same failure
// messages. Four of its five tests fail on redis-server 7.0.15 itself in
// 2026: they expect 9 remaining after one request of a 10/s limit, and the
// script's floating-point arithmetic on TIME (seconds since 2017, near 3e8,
// with microseconds) gives 8.99999… and floors it to 8. sluice reproduces
// that arithmetic, so it fails them identically.

func TestRedisRateOwnTestsEndAsOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch module (-short)")
	}
	redisAddr := startRedis(t)
	src, err := os.ReadFile(filepath.Join("testdata", "redis_rate-v10.0.1-rate_test.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte(`"server0": ":6379"`)) {
		t.Fatal("the test file no longer dials :6379")
	}
	gosum, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mainMod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(addr string) map[string]string {
		dir := t.TempDir()
		// The scratch module requires what sluice's does (so that every
		// version is one the module cache holds), and redis_rate.
		gomod := bytes.Replace(mainMod, []byte("module github.com/sluice-rl/sluice"), []byte("module redisratetests"), 1)
		gomod = append(gomod, "\nrequire github.com/go-redis/redis_rate/v10 v10.0.1\n"...)
		test := bytes.Replace(src, []byte(`":6379"`), []byte(`"`+addr+`"`), 1)
		for name, data := range map[string][]byte{"go.mod": gomod, "go.sum": gosum, "rate_test.go": test} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("go", "test", "-count=1", "-json", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off")
		out, _ := cmd.Output() // failing tests exit 1; the events say which
		if bytes.Contains(out, []byte("module lookup disabled by GOPROXY=off")) {
			t.Skipf("a module the scratch module needs is not in the module cache (run go mod download):\n%s", out)
		}
		return outcomes(t, out)
	}
	onRedis := run(redisAddr)
	onSluice := run(sluiceAddr)
	if len(onRedis) < 5 {
		t.Fatalf("go test of redis_rate's tests reported %d tests on Redis: %v", len(onRedis), onRedis)
	}
	var names []string
	for name := range onRedis {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Logf("%s on Redis: %s", name, firstLine(onRedis[name]))
		if onSluice[name] != onRedis[name] {
			t.Errorf("%s: on sluice\n%s\non Redis\n%s", name, onSluice[name], onRedis[name])
		}
	}
}

// outcomes reads go test -json output into each test's result and the
// assertion lines of its failure (file:line, Error, expected, actual).
func outcomes(t *testing.T, out []byte) map[string]string {
	t.Helper()
	res := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var ev struct {
			Action, Test, Output string
			Elapsed              float64
			Time                 time.Time
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			res[ev.Test] = ev.Action + res[ev.Test]
		case "output":
			line := strings.TrimSpace(ev.Output)
			for _, p := range []string{"rate_test.go:", "Error:", "expected:", "actual", "Messages:"} {
				if strings.HasPrefix(line, p) {
					res[ev.Test] += "\n" + line
				}
			}
		}
	}
	if len(res) == 0 {
		t.Fatalf("go test printed no test events:\n%s", out)
	}
	return res
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " (" + strings.ReplaceAll(s[i+1:], "\n", "; ") + ")"
	}
	return s
}

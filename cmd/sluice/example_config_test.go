package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite deploy/sluice.conf from `sluice --print-config`")

// TestExampleConfigIsTheOptionTable: deploy/sluice.conf is exactly what
// `sluice --print-config` writes for the defaults, every option of the
// table with its description (go test ./cmd/sluice -run
// TestExampleConfigIsTheOptionTable -update rewrites it), and the server
// starts with it, only its port and directory changed.
func TestExampleConfigIsTheOptionTable(t *testing.T) {
	path := filepath.Join(repoRoot, "deploy/sluice.conf")
	want, code := run(t, binPath, "--print-config")
	if code != 0 {
		t.Fatalf("--print-config: exit %d: %s", code, want)
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from `sluice --print-config`: rerun this test with -update", path)
	}
	p := startArgv(t, []string{path, "--port", "auto", "--dir", t.TempDir()})
	serving(t, client(t, p), "conf:1", 10)
}

package testutil

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// MainPackage is the import path of the sluice command that Binary builds.
const MainPackage = "github.com/sluice-rl/sluice/cmd/sluice"

// The binary, found or built once per test process.
var bin struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of a sluice binary: $SLUICE_BIN if set, else one built from
// MainPackage's source. A build is kept in the user's cache directory under a key of
// everything that goes into it (the Go version and environment, go.mod and go.sum, and the
// content of every file of the packages that are not a fixed module version), so that the
// test binaries of every package, and later runs over the same tree, share one build
// instead of linking their own. Builds unused for a week are removed.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := BinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// BinaryPath is Binary for a TestMain, which has no test to fail.
func BinaryPath() (string, error) {
	bin.once.Do(func() {
		if p := os.Getenv("SLUICE_BIN"); p != "" {
			bin.path = p
			return
		}
		bin.path, bin.err = cachedBuild()
	})
	return bin.path, bin.err
}

func cachedBuild() (string, error) {
	key, err := sourceKey()
	if err != nil {
		return "", err
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "sluice-test-bin")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	path := filepath.Join(dir, "sluice")
	if _, err := os.Stat(path); err == nil {
		now := time.Now()
		os.Chtimes(dir, now, now) // in use: not pruned
		return path, nil
	}
	// Build beside the cache entry and rename it into place: a test binary of another package
	// may be building the same key at the same time, and the first rename wins.
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out, err := exec.Command("go", "build", "-o", filepath.Join(tmp, "sluice"), MainPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", MainPackage, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(path); statErr != nil {
			return "", err
		}
	}
	prune(root, key)
	return path, nil
}

// prune removes the builds other than keep that were last used more than a week ago.
func prune(root, keep string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() == keep {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 7*24*time.Hour {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// sourceKey hashes what a build of MainPackage depends on: the toolchain and its
// environment, and for each package in its closure either its module's fixed version or, for
// the main module's packages and local replacements, the content of each of its files.
func sourceKey() (string, error) {
	h := sha256.New()
	env, err := exec.Command("go", "env", "GOVERSION", "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS",
		"GOEXPERIMENT", "GOAMD64", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	h.Write(env)
	if gomod := strings.TrimSpace(lastLine(env)); gomod != "" && gomod != os.DevNull {
		for _, f := range []string{gomod, strings.TrimSuffix(gomod, ".mod") + ".sum"} {
			if err := hashFile(h, f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
		}
	}
	const format = `{{if not .Standard}}{{.ImportPath}}|{{with .Module}}{{.Path}}@{{.Version}}{{with .Replace}}=>{{.Path}}@{{.Version}}{{end}}{{end}}|{{.Dir}}|` +
		`{{range .GoFiles}}{{.}} {{end}}{{range .CgoFiles}}{{.}} {{end}}{{range .EmbedFiles}}{{.}} {{end}}{{range .SFiles}}{{.}} {{end}}{{range .CFiles}}{{.}} {{end}}{{range .HFiles}}{{.}} {{end}}` +
		"\n{{end}}"
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-deps", "-f", format, MainPackage)
	cmd.Stderr = &stderr
	list, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -deps %s: %v\n%s", MainPackage, err, stderr.Bytes())
	}
	h.Write(list)
	for _, line := range strings.Split(string(list), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 || fixedVersion(f[1]) {
			continue
		}
		for _, name := range strings.Fields(f[3]) {
			if err := hashFile(h, filepath.Join(f[2], name)); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// fixedVersion reports whether a module, as "path@version[=>path@version]", is one the
// module cache holds unchanged: a version and no replacement by a local directory.
func fixedVersion(mod string) bool {
	if mod == "" {
		return false
	}
	if _, repl, ok := strings.Cut(mod, "=>"); ok {
		return !strings.HasSuffix(repl, "@")
	}
	return !strings.HasSuffix(mod, "@")
}

func hashFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(h, "%s\x00", path)
	_, err = io.Copy(h, f)
	return err
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return lines[len(lines)-1]
}

package client

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/client/sluicetest"
)

// The Node.js packages the snippets use, pinned.
var nodePackages = []string{"ioredis@5.4.1", "redis@4.7.0"}

// snippet is one fenced block of docs/client.md.
type snippet struct {
	lang, code string
	line       int
}

var fence = regexp.MustCompile("(?m)^```([a-z]+)\n")

// snippetDoc is the document whose "Other languages" snippets the test runs.
var snippetDoc = filepath.Join("docs", "client.md")

// docSnippets returns the blocks of lang in snippetDoc.
func docSnippets(t *testing.T, lang string) []snippet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", snippetDoc))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var out []snippet
	for _, m := range fence.FindAllStringSubmatchIndex(doc, -1) {
		if doc[m[2]:m[3]] != lang {
			continue
		}
		end := strings.Index(doc[m[1]:], "```")
		if end < 0 {
			t.Fatalf("%s: an unclosed %s block", snippetDoc, lang)
		}
		out = append(out, snippet{lang: lang, code: doc[m[1] : m[1]+end], line: strings.Count(doc[:m[0]], "\n") + 1})
	}
	return out
}

// runSnippet runs s's code with the interpreter against srv (the documented port 6380 and key
// user:42 replaced by srv's and a key of the snippet's own) and checks that it prints the
// first decision of a bucket of 20: "1 20 19".
func runSnippet(t *testing.T, srv *sluicetest.Server, s snippet, env []string, interp ...string) {
	t.Helper()
	_, port, _ := strings.Cut(srv.Addr, ":")
	code := strings.ReplaceAll(s.code, "6380", port)
	code = strings.ReplaceAll(code, "user:42", fmt.Sprintf("snippet:%s:%d", s.lang, s.line))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, interp[0], append(interp[1:], code)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1 20 19" {
		t.Errorf("%s:%d (%s): %v\n%s\nwant \"1 20 19\"", snippetDoc, s.line, s.lang, err, out)
	}
}

// pythonWithRedis returns a Python 3 that imports redis (Debian's python3-redis lives beside
// /usr/bin/python3, which may not be the first python3 on PATH), or "".
func pythonWithRedis() string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import redis").Run() == nil {
			return p
		}
	}
	return ""
}

// nodeModules installs the pinned packages once per user into the cache directory and returns
// its node_modules.
func nodeModules(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "sluice-snippets", strings.Join(nodePackages, "+"))
	mods := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(mods, ".complete")); err == nil {
		return mods
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--prefix", dir}, nodePackages...)
	if out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput(); err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := os.WriteFile(filepath.Join(mods, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return mods
}

// The other-language snippets of docs/client.md run as documented against a real
// sluice: redis-py with execute_command, ioredis with call, node-redis with sendCommand.
func TestOtherLanguageSnippets(t *testing.T) {
	srv := sluicetest.Start(t)
	t.Run("python", func(t *testing.T) {
		py := pythonWithRedis()
		if py == "" {
			t.Skip("no python3 with the redis package (apt-get install python3-redis; make deps does)")
		}
		snips := docSnippets(t, "python")
		if len(snips) != 1 {
			t.Fatalf("%d python snippets in %s; want 1", len(snips), snippetDoc)
		}
		runSnippet(t, srv, snips[0], nil, py, "-c")
	})
	t.Run("node", func(t *testing.T) {
		for _, bin := range []string{"node", "npm"} {
			if _, err := exec.LookPath(bin); err != nil {
				t.Skipf("no %s (apt-get install nodejs npm; make deps does)", bin)
			}
		}
		snips := docSnippets(t, "js")
		if len(snips) != 2 {
			t.Fatalf("%d js snippets in %s; want 2 (ioredis, node-redis)", len(snips), snippetDoc)
		}
		env := []string{"NODE_PATH=" + nodeModules(t)}
		for _, s := range snips {
			runSnippet(t, srv, s, env, "node", "-e")
		}
	})
}

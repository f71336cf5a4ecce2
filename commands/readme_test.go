package commands

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeComment is a comment the README puts after a command or an output
// line: two or more blanks, then "# ".
var readmeComment = regexp.MustCompile(`\s{2,}# .*$`)

// TestReadmeExamples replays every redis-cli example of README.md, in order,
// against a freshly built sluice started with the flags `make run` passes
// (read from the Makefile; no debug command, no policies), and wants the
// documented output. Comments after a command or an output line are the
// README's, not the server's; a "..." line stands for the rest of the output.
func TestReadmeExamples(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
	text, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := readExamples(strings.Split(string(text), "\n"))
	if len(examples) < 10 {
		t.Fatalf("found %d examples in README.md; the parser is broken", len(examples))
	}
	port := startBinary(t, append(makeRunFlags(t), "--loglevel", "warning")...)
	for _, ex := range examples {
		cmd := readmeComment.ReplaceAllString(ex.cmd, "")
		args, ok := shellWords(cmd)
		if !ok || len(args) < 4 || args[0] != "redis-cli" || args[1] != "-p" || args[2] != "6380" {
			t.Fatalf("README.md:%d: %q is not a redis-cli -p 6380 command", ex.line, ex.cmd)
		}
		documented := make([]string, len(ex.output))
		for i, l := range ex.output {
			documented[i] = readmeComment.ReplaceAllString(l, "")
		}
		got, want, _ := replay(cli, port, args[3:], documented)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("README.md:%d: $ %s\ngot:\n%s\ndocumented:\n%s", ex.line, cmd,
				strings.Join(got, "\n"), strings.Join(documented, "\n"))
		}
	}
}

package commands

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/testutil"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the outputs of docs/commands.md's examples with what the server answers")

// TestDocsExamples replays every redis-cli example of docs/commands.md, in
// order, against a freshly built sluice binary started the way the document
// says, and wants the documented output. A "..." line in the documented
// output stands for the rest of it (output that changes from run to run).
// With -update-docs it writes the outputs into the document instead.
func TestDocsExamples(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
	path := filepath.Join("..", "docs", "commands.md")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	examples := readExamples(lines)
	if len(examples) < 80 {
		t.Fatalf("found %d examples in docs/commands.md; the parser is broken", len(examples))
	}
	// The document says how to start the server for its examples: `make run ARGS='…'`.
	docArgs, ok := makeRunArgs(lines)
	if !ok {
		t.Fatal("docs/commands.md does not say, before its first example, how to start the server: `make run ARGS='…'`")
	}
	port := startBinary(t, append(append(makeRunFlags(t), docArgs...), "--loglevel", "warning")...)
	for _, ex := range examples {
		args, ok := shellWords(ex.cmd)
		if !ok || len(args) < 3 || args[0] != "redis-cli" || args[1] != "-p" || args[2] != "6380" {
			t.Fatalf("docs/commands.md:%d: %q is not a redis-cli -p 6380 command", ex.line, ex.cmd)
		}
		got, want, keep := replay(cli, port, args[3:], ex.output)
		if *updateDocs {
			if keep >= 0 {
				got = append(got, "...")
			}
			lines[ex.line-1] = "$ " + ex.cmd + "\x00" + strings.Join(got, "\n")
			for i := range ex.output {
				lines[ex.line+i] = "\x01"
			}
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("docs/commands.md:%d: $ %s\ngot:\n%s\ndocumented:\n%s", ex.line, ex.cmd,
				strings.Join(got, "\n"), strings.Join(ex.output, "\n"))
		}
	}
	if *updateDocs {
		var out []string
		for _, l := range lines {
			if l != "\x01" {
				out = append(out, strings.Split(strings.Replace(l, "\x00", "\n", 1), "\n")...)
			}
		}
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type example struct {
	line   int
	cmd    string
	output []string
}

// readExamples returns the "$ redis-cli …" lines of the document's console
// blocks, each with the output lines that follow it.
func readExamples(lines []string) []example {
	var out []example
	inBlock := false
	for i, line := range lines {
		switch {
		case line == "```console":
			inBlock = true
		case !inBlock:
		case line == "```":
			inBlock = false
		case strings.HasPrefix(line, "$ "):
			out = append(out, example{line: i + 1, cmd: line[2:]})
		case len(out) > 0:
			out[len(out)-1].output = append(out[len(out)-1].output, line)
		}
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the simple
// cases the document uses: blanks between words, '…' and "…" quoting.
func shellWords(s string) ([]string, bool) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case '\'', '"':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return nil, false
			}
			w.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, true
}

// replay runs redis-cli with args against port and returns its output lines
// and the documented ones, both cut before the documented "..." line if there
// is one (keep is then the number of lines kept, else -1).
func replay(cli, port string, args, documented []string) (got, want []string, keep int) {
	argv := append([]string{"-p", port, "--no-raw"}, args...)
	out, _ := exec.Command(cli, argv...).CombinedOutput()
	// INFO's text ends its lines with CR LF; the document has plain lines.
	got = strings.Split(strings.TrimRight(strings.ReplaceAll(string(out), "\r", ""), "\n"), "\n")
	if len(got) == 1 && got[0] == "" {
		got = nil
	}
	want, keep = documented, -1
	if n := len(want); n > 0 && want[n-1] == "..." {
		want, keep = want[:n-1], n-1
		if len(got) > keep {
			got = got[:keep]
		}
	}
	return got, want, keep
}

// makeRunFlags returns the flags the Makefile's run target passes to the
// server, but for the port (startBinary gives its own) and the empty ARGS.
func makeRunFlags(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(text), "\nrun:")
	if !ok {
		t.Fatal("Makefile: no run target")
	}
	for _, line := range strings.Split(recipe, "\n")[1:] {
		if !strings.HasPrefix(line, "\t") {
			break
		}
		words := strings.Fields(line)
		if len(words) == 0 || words[0] != "./$(BIN)" {
			continue
		}
		var flags []string
		for i := 1; i < len(words); i++ {
			switch w := words[i]; {
			case w == "--port" && i+1 < len(words) && words[i+1] == "$(PORT)":
				i++
			case w == "$(ARGS)":
			case strings.Contains(w, "$("):
				t.Fatalf("Makefile: run passes %q, which this test cannot reproduce", w)
			default:
				flags = append(flags, w)
			}
		}
		return flags
	}
	t.Fatal("Makefile: the run target does not start ./$(BIN)")
	return nil
}

// makeRunArgs returns the words of the first `make run ARGS='…'` line before
// the document's first console block.
func makeRunArgs(lines []string) ([]string, bool) {
	const prefix = "make run ARGS='"
	for _, line := range lines {
		if line == "```console" {
			break
		}
		if i := strings.Index(line, prefix); i >= 0 {
			value, _, ok := strings.Cut(line[i+len(prefix):], "'")
			if !ok {
				return nil, false
			}
			return strings.Fields(value), true
		}
	}
	return nil, false
}

// startBinary runs the sluice binary (testutil.Start: --port auto, --bind 127.0.0.1, a --dir
// of the test's own) with args, waits until it serves and returns its RESP port. The process
// is killed when the test ends.
func startBinary(t *testing.T, args ...string) string {
	t.Helper()
	_, port, _ := strings.Cut(testutil.Start(t, args...).Addr, ":")
	return port
}

package main

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// deploy/Dockerfile without a Docker daemon: the build stage's go build,
// run as written, makes a static binary that runs, and the image's
// ENTRYPOINT, CMD and HEALTHCHECK start and check a serving server.

// repoRoot is the module's root: the Dockerfile's build context.
const repoRoot = "../.."

// instruction is one Dockerfile instruction: its keyword and the rest.
type instruction struct{ cmd, args string }

// readDockerfile reads the instructions of a Dockerfile, its continued
// lines joined and its comments dropped.
func readDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || trimmed == "" && cur.Len() == 0 {
			continue
		}
		if s, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// jsonArgs reads an exec-form (JSON array) argument list.
func jsonArgs(t *testing.T, what, s string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s %s: not an exec-form JSON array (distroless has no shell): %v", what, s, err)
	}
	return v
}

// shellWords splits a RUN line the way sh does for what the Dockerfile
// uses: blanks, double quotes, and ${NAME} from vars.
func shellWords(t *testing.T, s string, vars map[string]string) []string {
	t.Helper()
	s = regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(s, func(m string) string {
		v, ok := vars[m[2:len(m)-1]]
		if !ok {
			t.Fatalf("RUN uses %s, which no ARG sets", m)
		}
		return v
	})
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			in, quoted = !in, true
		case r == ' ' && !in:
			if w.Len() > 0 || quoted {
				words = append(words, w.String())
			}
			w.Reset()
			quoted = false
		default:
			w.WriteRune(r)
		}
	}
	if w.Len() > 0 || quoted {
		words = append(words, w.String())
	}
	return words
}

// dockerBuild runs the build stage's go build as the Dockerfile writes it,
// from the build context, with its environment assignments and ARG
// defaults, writing the binary into dir instead of /out. It returns the
// binary's path and the version the build sets.
func dockerBuild(t *testing.T, steps []instruction, dir string) (bin, version string) {
	t.Helper()
	vars := map[string]string{}
	var run []string
	for _, s := range steps {
		switch s.cmd {
		case "ARG":
			if name, v, ok := strings.Cut(s.args, "="); ok {
				vars[name] = v
			}
		case "RUN":
			if strings.Contains(s.args, "go build") {
				run = shellWords(t, s.args, vars)
			}
		}
	}
	if run == nil {
		t.Fatal("no RUN … go build in the Dockerfile")
	}
	var env []string
	for len(run) > 0 && strings.Contains(run[0], "=") {
		env, run = append(env, run[0]), run[1:]
	}
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("the go build runs with %v; want CGO_ENABLED=0 (a static binary for a base without libc)", env)
	}
	bin = filepath.Join(dir, "sluice")
	i := slices.Index(run, "-o")
	if i < 0 || i+1 >= len(run) || run[i+1] != "/out/sluice" {
		t.Fatalf("go build %v: want -o /out/sluice, which the final stage copies", run)
	}
	run[i+1] = bin
	cmd := exec.Command(run[0], run[1:]...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", run, err, out)
	}
	return bin, vars["VERSION"]
}

// checkStatic fails unless the ELF file at path asks for no interpreter
// and no shared library: it runs on a base image without a libc.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: it is dynamically linked", path, p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", path, libs)
	}
}

// TestDockerfile: the build stage's go build makes a static binary that
// reports the Dockerfile's VERSION; the image runs as a numeric non-root
// user with /data as a volume; ENTRYPOINT and CMD, with only the
// addresses and /data changed for a test, start a server that serves
// RESP and /readyz on the exposed ports' services; HEALTHCHECK's command
// exits 0 against it.
func TestDockerfile(t *testing.T) {
	steps := readDockerfile(t, filepath.Join(repoRoot, "deploy/Dockerfile"))
	bin, version := dockerBuild(t, steps, t.TempDir())
	checkStatic(t, bin)
	if out, code := run(t, bin, "--version"); code != 0 || out != "sluice v="+version+"\n" {
		t.Fatalf("the image's binary: --version = %q (exit %d); want sluice v=%s", out, code, version)
	}

	var entrypoint, cmd, health []string
	var user, volume string
	var exposed []string
	from := 0
	for _, s := range steps {
		switch s.cmd {
		case "FROM":
			from++
		case "ENTRYPOINT":
			entrypoint = jsonArgs(t, "ENTRYPOINT", s.args)
		case "CMD":
			cmd = jsonArgs(t, "CMD", s.args)
		case "HEALTHCHECK":
			_, after, ok := strings.Cut(s.args, " CMD ")
			if !ok {
				t.Fatalf("HEALTHCHECK %s: no CMD", s.args)
			}
			health = jsonArgs(t, "HEALTHCHECK CMD", after)
		case "USER":
			if from == 2 {
				user = s.args
			}
		case "VOLUME":
			volume = s.args
		case "EXPOSE":
			exposed = strings.Fields(s.args)
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("the image runs as USER %q; want a numeric user other than root", user)
	}
	if volume != "/data" {
		t.Errorf("VOLUME %q; want /data", volume)
	}
	if len(entrypoint) != 1 || entrypoint[0] != "/sluice" {
		t.Fatalf("ENTRYPOINT %q; want [/sluice]", entrypoint)
	}
	// The exposed ports are the server's: RESP's default, the metrics
	// endpoint CMD binds, and the gRPC port docs/deploy.md gives.
	flag := func(args []string, name string) string {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	_, metricsPort, _ := strings.Cut(flag(cmd, "--metrics-bind"), ":")
	if want := []string{"6380", "8081", metricsPort}; !slices.Equal(exposed, want) {
		t.Errorf("EXPOSE %v; want %v (RESP, gRPC, metrics)", exposed, want)
	}
	if flag(cmd, "--dir") != volume {
		t.Errorf("CMD's --dir is %q; want the volume %s", flag(cmd, "--dir"), volume)
	}

	// The image's command line, with the test's addresses and directory.
	dir := t.TempDir()
	ports := filepath.Join(dir, "ports")
	argv := slices.Clone(cmd)
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "--bind":
			argv[i+1] = "127.0.0.1"
		case "--dir":
			argv[i+1] = dir
		case "--metrics-bind":
			argv[i+1] = "127.0.0.1:0"
		}
	}
	argv = append(argv, "--port", "auto", "--ports-file", ports)
	saved := binPath
	binPath = bin
	p := startArgv(t, argv)
	binPath = saved
	addrs := p.ports(t, ports)
	serving(t, client(t, p), "docker:1", 10)
	if out, code := run(t, bin, "--healthcheck", "http://"+addrs["metrics"]+"/readyz"); code != 0 {
		t.Errorf("/readyz of the image's server: exit %d: %s", code, out)
	}
	if len(health) != 3 || health[0] != "/sluice" || health[1] != "--healthcheck" || health[2] != "127.0.0.1:6380" {
		t.Fatalf("HEALTHCHECK CMD %q; want [/sluice --healthcheck 127.0.0.1:6380], the default RESP port on loopback", health)
	}
	if out, code := run(t, bin, health[1], addrs["resp"]); code != 0 {
		t.Errorf("HEALTHCHECK's command against the image's server: exit %d: %s", code, out)
	}
}

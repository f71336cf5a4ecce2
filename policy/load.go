package policy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File is one rules file's name (for error messages) and content.
type File struct {
	Name string
	Data []byte
}

// Parse builds a RuleSet from files, in the order given (a domain defined
// twice is reported at its second file, as envoyproxy/ratelimit does). A
// set with any fault is refused whole: Parse returns a *LoadError listing
// them, and no RuleSet. It reads nothing but its arguments.
func Parse(files []File, opts Options) (*RuleSet, error) {
	var specs []*fileSpec
	var faults []*ConfigError
	for _, f := range files {
		spec, errs := parseFile(f.Name, f.Data)
		faults = append(faults, errs...)
		if spec != nil {
			specs = append(specs, spec)
		}
	}
	if len(faults) > 0 {
		return nil, &LoadError{Faults: faults}
	}
	return build(specs, opts)
}

// Load reads the rules files at paths and parses them (Parse). A path is a
// file, or a directory whose files ending in .yaml or .yml are read in name
// order; names starting with a dot are skipped, which leaves out the
// ..data and ..<timestamp> entries of a Kubernetes ConfigMap volume while
// its visible names, symlinks into ..data, are followed. Subdirectories are
// not read. A directory may be empty; a missing path is an error.
func Load(paths []string, opts Options) (*RuleSet, error) {
	files, err := readStable(paths)
	if err != nil {
		return nil, err
	}
	return Parse(files, opts)
}

// listFiles expands paths into the files to read.
func listFiles(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, ErrNoRulesPath
	}
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p) // follows symlinks
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range entries {
			n := e.Name()
			if strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
				continue
			}
			full := filepath.Join(p, n)
			if st, err := os.Stat(full); err != nil || st.IsDir() {
				continue // a dangling symlink mid-swap, or a directory
			}
			names = append(names, full)
		}
		sort.Strings(names)
		out = append(out, names...)
	}
	return out, nil
}

// readFiles reads the files paths expand to.
func readFiles(paths []string) ([]File, error) {
	names, err := listFiles(paths)
	if err != nil {
		return nil, err
	}
	files := make([]File, 0, len(names))
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: n, Data: data})
	}
	return files, nil
}

// stableReads is how often readStable tries to read the same set twice.
const stableReads = 5

// readStable reads the file set twice and returns it once both reads agree,
// so that a set replaced while it was read (a ConfigMap's ..data swapped
// between two files) is never taken half old, half new.
func readStable(paths []string) ([]File, error) {
	return readStableWith(func() ([]File, error) { return readFiles(paths) })
}

// readStableWith is readStable with the reading passed in.
func readStableWith(read func() ([]File, error)) ([]File, error) {
	prev, err := read()
	if err != nil {
		return nil, err
	}
	for i := 0; i < stableReads; i++ {
		cur, err := read()
		if err != nil {
			return nil, err
		}
		if sameFiles(prev, cur) {
			return cur, nil
		}
		prev = cur
	}
	return nil, ErrFilesUnstable
}

func sameFiles(a, b []File) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// fingerprint hashes a file set's names and contents.
func fingerprint(files []File) [32]byte {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%d:%s%d:", len(f.Name), f.Name, len(f.Data))
		h.Write(f.Data)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

package policy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
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
//
// Every file read must be a regular file once symlinks are followed, and
// the files together hold at most opts.MaxBytes: a listed name that cannot
// be read (a dangling symlink), a device, a FIFO or a set past the cap is
// refused before anything is parsed. Opening never blocks (a FIFO is
// opened non-blocking and refused), and no read goes past the cap, even
// of a file that grows while it is read.
func Load(paths []string, opts Options) (*RuleSet, error) {
	files, err := readStable(paths, opts.maxBytes())
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
			if !st.Mode().IsRegular() {
				return nil, errNotRegular(p, st.Mode())
			}
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
			st, err := os.Stat(full)
			switch {
			case err != nil:
				return nil, errUnreadable(full, err) // a dangling symlink is a fault, not an absent file
			case st.IsDir():
				continue
			case !st.Mode().IsRegular():
				return nil, errNotRegular(full, st.Mode())
			}
			names = append(names, full)
		}
		sort.Strings(names)
		out = append(out, names...)
	}
	return out, nil
}

// readFiles reads the files paths expand to, at most limit bytes of them
// all together.
func readFiles(paths []string, limit int64) ([]File, error) {
	names, err := listFiles(paths)
	if err != nil {
		return nil, err
	}
	files := make([]File, 0, len(names))
	left := limit
	for _, n := range names {
		data, err := readFile(n, left, limit)
		if err != nil {
			return nil, err
		}
		left -= int64(len(data))
		files = append(files, File{Name: n, Data: data})
	}
	return files, nil
}

// readFile reads the regular file name, which may hold at most left bytes
// (the set's cap, limit, less what the files before it hold). The name
// may have been swapped since listFiles looked at it, so the opened file
// is checked again: O_NONBLOCK keeps the open of a FIFO from waiting for
// a writer, and fstat must say regular file. Its size is checked before
// any read, and the read itself stops at left bytes (a file may grow, or
// be endless with size 0, as /proc files are); a file that has more to
// give there is past the cap.
func readFile(name string, left, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, errUnreadable(name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, errUnreadable(name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, errNotRegular(name, st.Mode())
	}
	if st.Size() > left {
		return nil, errTooLarge(limit, name)
	}
	var buf bytes.Buffer
	buf.Grow(int(st.Size()) + bytes.MinRead) // a file of the size stat gives reads in one go
	if _, err := buf.ReadFrom(io.LimitReader(f, left)); err != nil {
		return nil, errUnreadable(name, err)
	}
	if int64(buf.Len()) == left {
		var probe [bytes.MinRead]byte
		n, err := f.Read(probe[:])
		if n > 0 {
			return nil, errTooLarge(limit, name)
		}
		if err != nil && err != io.EOF {
			return nil, errUnreadable(name, err)
		}
	}
	return buf.Bytes(), nil
}

// stableReads is how often readStable tries to read the same set twice.
const stableReads = 5

// readStable reads the file set twice and returns it once both reads agree,
// so that a set replaced while it was read (a ConfigMap's ..data swapped
// between two files) is never taken half old, half new.
func readStable(paths []string, limit int64) ([]File, error) {
	return readStableWith(func() ([]File, error) { return readFiles(paths, limit) })
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

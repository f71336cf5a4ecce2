package acl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The aclfile (ACL LOAD, ACL SAVE, --aclfile) in Redis's format: one user a
// line, "user <name> <rules…>", words separated by single spaces. Loading
// is all or nothing, with Redis's error texts; saving writes what ACL LIST
// shows. The same text, after a header, is the set's encoding for the Raft
// log and snapshots.

// ErrSaveFailed is ACL SAVE's reply when the file could not be written (the
// cause goes to the server's log).
var ErrSaveFailed = errors.New("There was an error trying to save the ACLs. Please check the server logs for more information")

// LoadError is a refused aclfile: every fault, in Redis's words, on one
// line, ending with Redis's notice that nothing changed.
type LoadError struct{ Msg string }

func (e *LoadError) Error() string { return e.Msg }

// encodingHeader starts Encode's output; its number changes with the
// format.
const encodingHeader = "sluice-acl 1\n"

// Text is the set in the aclfile format: "user <name> <rules>\n" for every
// user, in byte order of the names. Two sets with the same users and the
// same registry have the same text.
func (us *Users) Text() []byte {
	var b bytes.Buffer
	for _, line := range us.List() {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Encode returns the set for the Raft log or a snapshot: deterministic, and
// read back by Decode.
func (us *Users) Encode() []byte {
	return append([]byte(encodingHeader), us.Text()...)
}

// Decode replaces the set with one that Encode returned, all or nothing.
func (us *Users) Decode(data []byte) error {
	text, ok := bytes.CutPrefix(data, []byte(encodingHeader))
	if !ok {
		return fmt.Errorf("%w: no %q header", ErrCorrupt, strings.TrimSpace(encodingHeader))
	}
	if err := us.LoadText("(replicated)", text); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// LoadFile replaces the set with the users in the aclfile at path (ACL
// LOAD): all or nothing, and a *LoadError naming the file and the lines at
// fault otherwise.
func (us *Users) LoadFile(path string) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return &LoadError{Msg: fmt.Sprintf("Error loading ACLs, opening file '%s': %s", path, strerror(err))}
	}
	return us.LoadText(path, text)
}

// strerror words an I/O error as C's strerror does ("No such file or
// directory").
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return err.Error()
}

// LoadText is LoadFile over text already read; name is the file's name in
// the errors. A file without a default user gets the default one
// (on nopass ~* &* +@all). The default user keeps its identity (its
// connections stay, with the new rules); every other user of the old set is
// retired (its connections must go), as Redis frees them.
func (us *Users) LoadText(name string, text []byte) error {
	fresh := map[string]*state{}
	var errs strings.Builder
	for i, line := range strings.Split(string(text), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", name, n)
			continue
		}
		user := argv[1]
		if hasSpaces(user) {
			// Redis's text, with its stray leading quote.
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", name, n, user)
			continue
		}
		if fresh[user] != nil {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", user, n)
			continue
		}
		s := newState(us.reg)
		fresh[user] = &s
		for _, rule := range argv[2:] {
			rule = strings.Trim(rule, "\t\r\n")
			if err := s.apply(us.reg, rule); err != nil {
				if errors.Is(err, ErrUnknownCommand) {
					// Redis 7.0 words this one apart, naming the rule.
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", name, n, cstring(rule), err)
				} else {
					fmt.Fprintf(&errs, "%s:%d: %s. ", name, n, err)
				}
			}
		}
	}
	if errs.Len() > 0 {
		errs.WriteString("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
		return &LoadError{Msg: errs.String()}
	}
	if fresh[DefaultUser] == nil {
		d := defaultState(us.reg)
		fresh[DefaultUser] = &d
	}
	defer us.retired() // runs after the unlock below
	us.mu.Lock()
	defer us.mu.Unlock()
	old := us.users
	us.users = make(map[string]*User, len(fresh))
	for n, s := range fresh {
		if n == DefaultUser {
			d := old[DefaultUser]
			d.st = *s
			d.perms.Store(compile(s))
			us.users[n] = d
			continue
		}
		us.users[n] = us.newUser(n, *s)
	}
	for n, u := range old {
		if n != DefaultUser {
			u.retire()
		}
	}
	return nil
}

// SaveFile writes the set to path in the aclfile format (ACL SAVE): to a
// temporary file in the same directory, synced, then renamed over path, so
// that a crash leaves the old file or the new one, never a mix. The error
// is the I/O fault, for the log; the client's reply is ErrSaveFailed.
func (us *Users) SaveFile(path string) error {
	text := us.Text()
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o640)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("saving the ACL file %s: %w", path, err)
	}
	return nil
}

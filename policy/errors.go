package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// The error vocabulary. Texts carry no Redis error code: the edge that
// writes a reply adds "ERR " (commands does so for any text without a code).
// Errors about one name wrap these sentinels with %w, so errors.Is works.
var (
	ErrNoSuchPolicy   = errors.New("no such policy")
	ErrInvalidName    = errors.New("invalid policy name")
	ErrReadOnly       = errors.New("is read-only")
	ErrBadLimit       = errors.New("invalid limit")
	ErrBadOverride    = errors.New("invalid override")
	ErrCorrupt        = errors.New("corrupt policy encoding")
	ErrEmptyDomain    = errors.New("rate limit domain must not be empty")
	ErrNoDescriptors  = errors.New("rate limit descriptor list must not be empty")
	ErrNegativeHits   = errors.New("hits must not be negative")
	ErrFilesUnstable  = errors.New("rules files kept changing while being read")
	ErrNoRulesPath    = errors.New("no rules file or directory given")
	ErrWatcherRunning = errors.New("watcher is already running")
	// The rules files' faults as files, before any is parsed, and the
	// watcher's refusals.
	ErrNotRegular      = errors.New("is not a regular file")
	ErrRulesTooLarge   = errors.New("rules files hold more than")
	ErrDropsAllDomains = errors.New("the rules files define no domain")
	ErrLoadUnderWay    = errors.New("a load of the rules files is under way: try again later")
	ErrLoadSlow        = errors.New("the rules files are still being loaded: INFO policies shows the outcome")
)

// errNotRegular is the error for a rules file that stat, following
// symlinks, does not call a regular file: a device, a FIFO, a socket.
func errNotRegular(name string, mode fs.FileMode) error {
	kind := "an irregular file"
	switch t := mode.Type(); {
	case t&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case t&fs.ModeCharDevice != 0:
		kind = "a character device"
	case t&fs.ModeDevice != 0:
		kind = "a block device"
	case t&fs.ModeSocket != 0:
		kind = "a socket"
	case t&fs.ModeDir != 0:
		kind = "a directory"
	}
	return fmt.Errorf("rules file %s %w (%s)", name, ErrNotRegular, kind)
}

// errTooLarge is the error for a file set past Options.MaxBytes, at the
// file that took it past.
func errTooLarge(limit int64, name string) error {
	return fmt.Errorf("%w %d bytes (rules-max-bytes), at %s", ErrRulesTooLarge, limit, name)
}

// errUnreadable is the error for a rules file that a directory lists but
// that cannot be opened or read (a dangling symlink): the path once, then
// the system's reason.
func errUnreadable(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("rules file %s cannot be read: %w", name, err)
}

// errDropsAllDomains is the error for a set without domains that would
// replace a set of n.
func errDropsAllDomains(n int) error {
	return fmt.Errorf("%w, which would drop all %d domains in force: refused (RL.POLICY RELOAD FORCE takes such a set)",
		ErrDropsAllDomains, n)
}

// NoSuchPolicy returns the error for an unknown policy name:
// "no such policy 'x'".
func NoSuchPolicy(name string) error {
	return fmt.Errorf("%w '%s'", ErrNoSuchPolicy, quoteName(name))
}

// errInvalidName is the error for a name outside [A-Za-z0-9_.:-]{1,128}.
func errInvalidName(name string) error {
	return fmt.Errorf("%w '%s': use 1 to 128 of the characters A-Z a-z 0-9 _ . : -", ErrInvalidName, quoteName(name))
}

// errReadOnly is the error for a command that changes a policy the rules
// file owns.
func errReadOnly(name, file string) error {
	return fmt.Errorf("policy '%s' %w: it comes from the rules file %s", name, ErrReadOnly, file)
}

// errLimit words a limit's fault.
func errLimit(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadLimit, fmt.Sprintf(format, args...))
}

// errOverride words an override's fault.
func errOverride(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadOverride, fmt.Sprintf(format, args...))
}

// errCorrupt words a decoding fault.
func errCorrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// quoteName cuts a client's name to 128 bytes and replaces CR and LF, so
// that an error text stays one short RESP line.
func quoteName(s string) string {
	if len(s) > 128 {
		s = s[:128]
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// ConfigError is one fault in a rules file, at a position when one is known
// (Line and Column count from 1; 0 means unknown). Msg uses the wording of
// envoyproxy/ratelimit where that service has one.
type ConfigError struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// LoadError is the refusal of a whole file set: every fault found, in file
// order. Its text is one line (faults joined by "; "), so that it fits a
// RESP error reply.
type LoadError struct {
	Faults []*ConfigError
}

// maxFaults bounds how many faults a LoadError's text lists.
const maxFaults = 10

func (e *LoadError) Error() string {
	var b strings.Builder
	for i, f := range e.Faults {
		if i == maxFaults {
			fmt.Fprintf(&b, "; and %d more", len(e.Faults)-maxFaults)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Error())
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, b.String())
}

// Texts of the rules-file faults that envoyproxy/ratelimit also reports,
// in its wording (src/config/config_impl.go).
const (
	msgEmptyDomain      = "config file cannot have empty domain"
	msgEmptyKey         = "descriptor has empty key"
	msgUnitWhenUnlimit  = "should not specify rate limit unit when unlimited"
	msgEmptyReplaces    = "should not have an empty replaces entry"
	msgReplacesSelf     = "replaces should not contain name of same descriptor"
	msgCheckingConfig   = "error checking config"
	msgDuplicateDomain  = "duplicate domain '%s' in config file"
	msgDuplicateKey     = "duplicate descriptor composite key '%s'"
	msgInvalidUnit      = "invalid rate limit unit '%s'"
	msgUnknownKey       = "config error, unknown key '%s'"
	msgKeyNotString     = "config error, key is not of type string: %s"
	msgListOfNonMap     = "config error, yaml file contains list of type other than map: %s"
	msgShareNoWildcard  = "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'"
	msgLoadingConfig    = "error loading config file: %s"
	msgNotMapping       = "%s must be a mapping"
	msgNotList          = "%s must be a list"
	msgDuplicateMapKey  = "key '%s' appears twice in one mapping"
	msgTooManyNodes     = "the file expands to more than %d YAML nodes (aliases?)"
	msgSeveralDocuments = "a file holds one YAML document; this one has several"
)

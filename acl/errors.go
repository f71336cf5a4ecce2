package acl

import (
	"errors"
	"fmt"
	"strings"
)

// The error vocabulary. Texts are Redis 7.0's (acl.c) where Redis has one;
// they carry no error code unless Redis's reply has its own (NOPERM,
// WRONGPASS): the edge that writes a reply adds "ERR " to the others.
var (
	// Rule errors, as ACLSetUserStringError words them.
	ErrUnknownCommand      = errors.New("Unknown command or category name in ACL")
	ErrSyntax              = errors.New("Syntax error")
	ErrPatternAfterAllKeys = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid " +
		"and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	ErrChannelAfterAll = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid " +
		"and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	ErrNoSuchPassword  = errors.New("The password you are trying to remove from the user does not exist")
	ErrBadHash         = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	ErrFirstArgOfSub   = errors.New("Allowing first-arg of a subcommand is not supported")
	ErrSelectors       = errors.New("Selectors are not supported")
	ErrUsernameSpaces  = errors.New("Usernames can't contain spaces or null characters")
	ErrDeleteDefault   = errors.New("The 'default' user cannot be removed")
	ErrWrongPass       = errors.New("WRONGPASS invalid username-password pair or user is disabled.")
	ErrNoDefaultPass   = errors.New("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	ErrNoSuchUser      = errors.New("Can not find user")
	ErrUserNotFound    = errors.New("User")
	ErrUnknownCategory = errors.New("Unknown category")
	ErrCorrupt         = errors.New("corrupt ACL encoding")
	ErrBadChange       = errors.New("acl: unknown replicated change")

	// Registration errors: a fault in the caller's command table.
	ErrDuplicateCommand = errors.New("acl: command registered twice")
	ErrNoParent         = errors.New("acl: a subcommand's command must be registered first")
	ErrBadCategory      = errors.New("acl: unknown category")
	ErrTooManyCats      = errors.New("acl: at most 64 categories")
	ErrBadName          = errors.New("acl: a command name must be lower case, without spaces, with at most one |")
)

// RuleError is a rule that SETUSER (or a file) could not apply: Rule is the
// rule as given, Err one of the rule errors above.
type RuleError struct {
	Rule string
	Err  error
}

// Error is Redis's reply text, which shows the rule as a C string: up to
// its first NUL byte.
func (e *RuleError) Error() string {
	return fmt.Sprintf("Error in ACL SETUSER modifier '%s': %s", cstring(e.Rule), e.Err)
}

// cstring is s up to its first NUL byte, as C's printf shows it.
func cstring(s string) string {
	s, _, _ = strings.Cut(s, "\x00")
	return s
}

func (e *RuleError) Unwrap() error { return e.Err }

// noSuchUser is GETUSER's reply for an unknown user.
func noSuchUser(name string) error {
	return fmt.Errorf("%w '%s' in ACL", ErrNoSuchUser, name)
}

// unknownCategory is ACL CAT's reply for an unknown category.
func unknownCategory(name string) error {
	if len(name) > 128 {
		name = name[:128]
	}
	return fmt.Errorf("%w '%s'", ErrUnknownCategory, name)
}

// errUserNotFound is ACL DRYRUN's reply for an unknown user.
func errUserNotFound(name string) error {
	return fmt.Errorf("%w '%s' not found", ErrUserNotFound, name)
}

package acl

import (
	"fmt"
	"strings"
)

// Categories are sluice's ACL categories, in the order ACL CAT lists them:
// Redis's own where they fit, then sluice's.
//
//	keyspace     commands on keys whatever they hold (DEL, EXISTS, TYPE, PTTL, SCAN, RL.RESET)
//	read         commands that read a limiter's state (peeks, RL.INFO, TYPE, PTTL, SCAN, EXISTS)
//	write        commands that change it (decisions, RL.RESET, DEL, FLUSHALL)
//	admin        operating the server (CONFIG, SHUTDOWN, FLUSHALL, SAVE, DEBUG, RAFT.*, ACL, MONITOR, CLIENT KILL)
//	fast, slow   as Redis has them: O(1) or O(log n) commands, and the others
//	dangerous    commands that can hurt everyone (FLUSHALL, DEBUG, SHUTDOWN, CONFIG SET, RAFT.*, ACL, CLIENT KILL)
//	connection   the connection's own state (AUTH, HELLO, PING, ECHO, CLIENT SETNAME, SELECT, QUIT)
//	transaction  MULTI, EXEC, DISCARD, WATCH
//	limiter      the limiter decisions (RL.TOKEN, RL.LEAKY, RL.FIXED, RL.SLIDING, RL.LOG, RL.ALL, CL.THROTTLE, RL.ACQUIRE, RL.RELEASE)
//	policy       named policies and overrides (RL.POLICY, RL.OVERRIDE, RL.CHECK)
var Categories = []string{"keyspace", "read", "write", "admin", "fast", "slow", "dangerous", "connection",
	"transaction", "limiter", "policy"}

// Access says what a command does with a key, for %R~ and %W~ patterns:
// Read reads its value, Write changes it. A command that names a key
// without reading its value (EXISTS, TYPE, PTTL) has neither, and any key
// pattern that matches the key admits it, as in Redis.
type Access uint8

const (
	Read  Access = 1 << iota // the command reads the key's value
	Write                    // the command changes or deletes it
)

// KeySpec says where a command's keys are among its arguments (argv[0] is
// the command's name) and how it uses them: argv[First], argv[First+Step],
// … up to argv[Last], where a negative Last counts from the end (-1: the
// last argument). Keys that no KeySpec describes (those inside RL.ALL, the
// keys a policy derives) are checked by the caller with Perms.CheckKey.
type KeySpec struct {
	First, Last, Step int
	Access            Access
}

// KeyRef is a key Spec.Locate found: argv[Pos], used with Access.
type KeyRef struct {
	Pos    int
	Access Access
}

// Spec describes a command to register.
type Spec struct {
	// Name is the command's name in lower case ("rl.token"), or a
	// subcommand's full name ("client|kill") once its command is registered.
	Name string
	// Categories are names from the registry's categories.
	Categories []string
	// Keys locate the command's keys.
	Keys []KeySpec
	// Locate, when set, locates the keys instead of Keys: it appends to buf
	// the position in argv of each key the ACL checks, with its access, and
	// returns it. It serves the commands whose keys no fixed range locates
	// (EVAL's numkeys, a form that derives its keys).
	Locate func(argv [][]byte, buf []KeyRef) []KeyRef
	// NoAuth commands (AUTH, HELLO, QUIT) are allowed to every user, as
	// Redis's CMD_NO_AUTH commands are.
	NoAuth bool
}

// Command is a registered command: the handle the caller keeps with its own
// table entry and passes to Perms.Check.
type Command struct {
	ID     int    // index in the registry, and bit in every permission bitmap
	Name   string // the full name: "get", "client|kill"
	Parent *Command
	Subs   []*Command // subcommands, in registration order
	cats   uint64
	keys   []KeySpec
	locate func(argv [][]byte, buf []KeyRef) []KeyRef
	noAuth bool
}

// Registry is the command table the ACL knows: categories and, for each
// command, its categories and key positions. Commands get consecutive ids
// in registration order, which is also the order in which rules are
// rendered, so that two processes that register the same commands in the
// same order render and encode every user alike.
//
// Concurrency: register every command before the registry is used; after
// that, its methods are safe for concurrent use (they only read).
type Registry struct {
	cats   []string
	byName map[string]*Command
	all    []*Command // by id
	top    []*Command // top-level commands in registration order
}

// NewRegistry returns a registry with these categories (at most 64), in
// ACL CAT's order.
func NewRegistry(categories []string) (*Registry, error) {
	if len(categories) > 64 {
		return nil, ErrTooManyCats
	}
	return &Registry{cats: append([]string(nil), categories...), byName: map[string]*Command{}}, nil
}

// Register adds a command and returns its handle.
func (r *Registry) Register(s Spec) (*Command, error) {
	if s.Name == "" || s.Name != strings.ToLower(s.Name) || strings.ContainsAny(s.Name, " \t\r\n\v\f\x00") ||
		strings.Count(s.Name, "|") > 1 || strings.HasPrefix(s.Name, "|") || strings.HasSuffix(s.Name, "|") {
		return nil, fmt.Errorf("%w: %q", ErrBadName, s.Name)
	}
	if r.byName[s.Name] != nil {
		return nil, fmt.Errorf("%w: %s", ErrDuplicateCommand, s.Name)
	}
	c := &Command{ID: len(r.all), Name: s.Name, keys: append([]KeySpec(nil), s.Keys...), locate: s.Locate,
		noAuth: s.NoAuth}
	for _, name := range s.Categories {
		i := r.category(name)
		if i < 0 {
			return nil, fmt.Errorf("%w %q for %s", ErrBadCategory, name, s.Name)
		}
		c.cats |= 1 << i
	}
	if base, _, ok := strings.Cut(s.Name, "|"); ok {
		c.Parent = r.byName[base]
		if c.Parent == nil || c.Parent.Parent != nil {
			return nil, fmt.Errorf("%w: %s", ErrNoParent, s.Name)
		}
		c.Parent.Subs = append(c.Parent.Subs, c)
	} else {
		r.top = append(r.top, c)
	}
	r.byName[s.Name] = c
	r.all = append(r.all, c)
	return c, nil
}

// category returns the index of a category name (any letter case), or -1.
func (r *Registry) category(name string) int {
	for i, c := range r.cats {
		if strings.EqualFold(c, name) {
			return i
		}
	}
	return -1
}

// Lookup finds a command by name in any letter case: "get", or a
// subcommand's full name "client|kill". A command with subcommands is
// found by its own name too.
func (r *Registry) Lookup(name string) *Command {
	return r.byName[strings.ToLower(name)]
}

// Len is the number of registered commands and subcommands.
func (r *Registry) Len() int { return len(r.all) }

// Categories returns the category names, in ACL CAT's order.
func (r *Registry) Categories() []string { return append([]string(nil), r.cats...) }

// CategoryCommands returns the commands and subcommands in a category, as
// ACL CAT <category> lists them (registration order here; Redis's is that
// of its hash table).
func (r *Registry) CategoryCommands(category string) ([]string, error) {
	i := r.category(category)
	if i < 0 {
		return nil, unknownCategory(category)
	}
	var out []string
	var walk func(cmds []*Command)
	walk = func(cmds []*Command) {
		for _, c := range cmds {
			if c.cats&(1<<i) != 0 {
				out = append(out, c.Name)
			}
			walk(c.Subs)
		}
	}
	walk(r.top)
	return out, nil
}

// CategoriesOf returns the names of c's categories, in ACL CAT's order (for
// COMMAND INFO, which prefixes each with @).
func (r *Registry) CategoriesOf(c *Command) []string {
	var out []string
	for i, name := range r.cats {
		if c.cats&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

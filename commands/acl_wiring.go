package commands

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sluice-rl/sluice/acl"
)

// Access control: the ACL wired into the commands (every command of the
// table registered with the acl package, with its categories and key
// positions; a Handler's users and ACL LOG; the check session.exec makes
// before a command runs), protected mode, and rename-command.

// aclRegistry registers the command table once, in name order, so that
// every process with the same commands renders and encodes users alike.
// It sets each command's acl handle; it runs before the first Handler
// serves anyone (New calls it) and the table is not changed after.
var aclRegistry = sync.OnceValues(func() (*acl.Registry, error) {
	reg, err := acl.NewRegistry(acl.Categories)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(commandTable))
	for name := range commandTable {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		cmd := commandTable[name]
		locate, ranges := aclLocate(cmd), aclRanges(cmd)
		if cmd.acl, err = reg.Register(acl.Spec{Name: name, Categories: aclCategories(cmd, ""),
			Keys: ranges, Locate: locate, NoAuth: cmd.flags&flagNoAuth != 0}); err != nil {
			return nil, err
		}
		for _, sub := range cmd.subs {
			if _, err := reg.Register(acl.Spec{Name: name + "|" + sub, Categories: aclCategories(cmd, sub),
				Keys: ranges, Locate: locate, NoAuth: cmd.flags&flagNoAuth != 0}); err != nil {
				return nil, err
			}
		}
	}
	return reg, nil
})

// aclCategories are a command's (or its subcommand sub's) ACL categories:
// the ones its flags and group imply, as Redis's setImplicitACLCategories,
// and the ones its registration lists (command.categories); a subcommand
// with its own (command.subCategories) has those instead.
func aclCategories(cmd *command, sub string) []string {
	var cats []string
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(cats, n) {
				cats = append(cats, n)
			}
		}
	}
	f := cmd.flags
	if own, ok := cmd.subCategories[sub]; ok && sub != "" {
		add(own...)
	} else {
		if f&flagDecision != 0 {
			add("limiter", "write")
		}
		if f&flagWrite != 0 {
			add("write")
		}
		if f&flagReadOnly != 0 {
			add("read")
		}
		if f&flagAdmin != 0 || f&flagForward != 0 {
			add("admin", "dangerous")
		}
		switch cmd.group {
		case "connection":
			add("connection")
		case "generic":
			add("keyspace")
		}
		add(cmd.categories...)
	}
	if f&flagFast != 0 {
		add("fast")
	} else {
		add("slow")
	}
	return cats
}

// aclState is a Handler's users and ACL LOG.
type aclState struct {
	reg   *acl.Registry
	users *acl.Users
	log   *acl.Log
}

// newACL returns the users and ACL LOG of a Handler: cfg.Users, or the
// users NewUsers makes from cfg.
func newACL(cfg *Config) (aclState, error) {
	reg, err := aclRegistry()
	if err != nil {
		return aclState{}, err
	}
	st := aclState{reg: reg, users: cfg.Users, log: acl.NewLog(acl.DefaultLogMax)}
	if st.users == nil {
		if st.users, err = NewUsers(*cfg); err != nil {
			return aclState{}, err
		}
	}
	return st, nil
}

// NewUsers returns the users cfg sets: requirepass on the default user,
// then the aclfile if there is one (which names its own default user, or
// keeps it). A replicated node makes them before its Raft log replays
// (Config.Users).
func NewUsers(cfg Config) (*acl.Users, error) {
	reg, err := aclRegistry()
	if err != nil {
		return nil, err
	}
	users := acl.NewUsers(reg)
	users.SetDefaultPassword(cfg.Password)
	if cfg.ACLFile != "" {
		if err := users.LoadFile(cfg.ACLFile); err != nil {
			return nil, err
		}
	}
	return users, nil
}

// permError is the NOPERM error for cmd with args if the session's user
// may not run it, logged in the ACL LOG with ctx; nil if it may. It writes
// nothing and runs no deferred work (MULTI queues with it).
func (s *session) permError(cmd *command, args [][]byte, ctx acl.Context) error {
	d, name, object := s.permDenial(cmd, args)
	if d.Reason == acl.Allowed {
		return nil
	}
	s.logDenial(d.Reason, ctx, object)
	return errNoPerm(d, name)
}

// permDenial is the check permError makes, logging nothing: the verdict,
// the command's full name, and what ACL LOG names (the command, or the key
// denied).
func (s *session) permDenial(cmd *command, args [][]byte) (d acl.Denial, name, object string) {
	p := s.user.Perms()
	if p.AllowsAll() {
		return acl.Denial{}, "", ""
	}
	ac := cmd.acl
	if len(cmd.subs) > 0 && len(args) > 1 {
		for _, sc := range ac.Subs {
			if equalFold(args[1], sc.Name[len(ac.Name)+1:]) {
				ac = sc
				break
			}
		}
	}
	d = p.Check(ac, args) // the command, then the keys its registration locates (aclRanges, aclLocate)
	switch d.Reason {
	case acl.Allowed:
		return d, "", ""
	case acl.DeniedKey:
		return d, ac.Name, string(args[d.Pos])
	}
	return d, ac.Name, ac.Name
}

// derivedKeyError is the NOPERM error, logged in the ACL LOG, if the
// session's user may not reach key with access; nil if it may. It checks
// the keys a command derives rather than names (RL.CHECK's
// pol:<policy>:<algo>:<subject>), whose arguments its key specs mark
// keyDerived. A user with allkeys pays one branch.
func (s *session) derivedKeyError(key []byte, access acl.Access) error {
	p := s.user.Perms()
	if p.AllowsAllKeys() || p.CheckKey(key, access) {
		return nil
	}
	s.logDenial(acl.DeniedKey, acl.Toplevel, string(key))
	return errNoPerm(acl.Denial{Reason: acl.DeniedKey}, "")
}

// deniedInMulti is permError for a command MULTI queues: it sets *err and
// reports whether it is not nil.
func (s *session) deniedInMulti(cmd *command, args [][]byte, err *error) bool {
	*err = s.permError(cmd, args, acl.Multi)
	return *err != nil
}

// logDenial adds an entry to the ACL LOG for the connection s serves,
// unless the command in hand has added its entries already (s.quiet).
func (s *session) logDenial(reason acl.Reason, ctx acl.Context, object string) {
	if s.quiet {
		return
	}
	user := ""
	if s.user != nil {
		user = s.user.Name()
	}
	s.h.acl.log.Add(acl.LogEntry{Reason: reason, Context: ctx, Object: object, Username: user,
		Time: s.h.clock.Now() / 1e6, ClientInfo: s.describe(s)})
}

// authenticate checks a username/password pair against the users (AUTH,
// HELLO AUTH) and, on success, makes the session that user. A failure is
// logged in the ACL LOG with the command that tried.
func (s *session) authenticate(cmdName string, user, pass []byte, defaultOnly bool) error {
	u, err := s.checkPassword(user, pass, defaultOnly)
	if err != nil && err != acl.ErrNoDefaultPass && s.syncMeta() {
		// A user or password another node of a sharded cluster just set.
		u, err = s.checkPassword(user, pass, defaultOnly)
	}
	switch {
	case err == acl.ErrNoDefaultPass:
		return errNoPassSet
	case err != nil:
		s.logDenialAs(string(user), cmdName)
		return errWrongPass
	}
	s.mu.Lock() // CLIENT LIST reads the user from other goroutines
	s.user = u
	s.mu.Unlock()
	s.authed = true
	s.conn.SetUnauthenticated(false)
	return nil
}

// checkPassword returns the user whose password pass is: user's, or the
// default user's with defaultOnly.
func (s *session) checkPassword(user, pass []byte, defaultOnly bool) (*acl.User, error) {
	if defaultOnly {
		return s.h.acl.users.AuthDefault(string(pass))
	}
	return s.h.acl.users.Authenticate(string(user), string(pass))
}

func (s *session) logDenialAs(user, cmdName string) {
	s.h.acl.log.Add(acl.LogEntry{Reason: acl.DeniedAuth, Context: acl.Toplevel, Object: cmdName, Username: user,
		Time: s.h.clock.Now() / 1e6, ClientInfo: s.describe(s)})
}

// refuse answers a connection that protected mode refuses, whatever it
// sent, and closes it, as Redis does.
func (s *session) refuse() {
	s.runDeferred()
	s.writeError(errProtected)
	s.conn.CloseAfterReply()
}

// rename-command, as in redis.conf: a command answered under another name,
// or hidden ("" as the new name), for this Handler only. The table is built
// once by New; without renames the global table serves, and the hot path
// pays one nil check on a lookup that misses the session's cache.

// Rename is one rename-command directive: From is answered as To, and no
// longer as From; To "" hides it.
type Rename struct{ From, To string }

// renamedTable returns the command table with the renames applied, nil if
// there are none. A renamed command is a copy of the original with the new
// name, so that its errors and the session's cache use the name clients
// send.
func renamedTable(renames []Rename) (map[string]*command, error) {
	if len(renames) == 0 {
		return nil, nil
	}
	table := make(map[string]*command, len(commandTable))
	for name, cmd := range commandTable {
		table[name] = cmd
	}
	for _, r := range renames {
		from, to := strings.ToLower(r.From), strings.ToLower(r.To)
		cmd := table[from]
		if cmd == nil {
			return nil, fmt.Errorf("commands: rename-command %s: no such command", r.From)
		}
		delete(table, from)
		if to == "" {
			continue
		}
		if table[to] != nil || len(to) > 24 || strings.ContainsAny(to, " \t\r\n") {
			return nil, fmt.Errorf("commands: rename-command %s %s: the new name is taken, too long (24 bytes) or has blanks", r.From, r.To)
		}
		renamed := *cmd
		renamed.name = to
		table[to] = &renamed
	}
	return table, nil
}

// lookupCommand is the package's lookupCommand over the Handler's table.
func (h *Handler) lookupCommand(name []byte) *command {
	if h.table == nil {
		return lookupCommand(name)
	}
	return lookupIn(h.table, name)
}

// closeRetired closes the connections whose user was removed (ACL DELUSER,
// ACL LOAD, or the same through a group's log), as Redis closes them; a
// connection in the middle of a batch closes once that batch is done. It
// runs after every such change (acl.Users.OnRetire), outside the users'
// lock.
func (h *Handler) closeRetired() {
	t := h.transport.Load()
	if t == nil {
		return
	}
	var ids []int64
	h.conns(nil, func(o *session) {
		o.mu.Lock()
		u := o.user
		o.mu.Unlock()
		if u != nil && u.Deleted() {
			ids = append(ids, o.conn.ID())
		}
	})
	for _, id := range ids {
		t.Kill(id)
	}
}
